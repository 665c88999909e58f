import { FencedError } from '../../errors/data-plane/fenced.error.js';
import type { MessageRunner, Outcome } from '../message-runner.js';
import type { RawStreamEntry } from '../raw-entry.types.js';
import type { ShardMessage } from '../shard-message.js';
import { KeyGate, type GatedEntry } from './key-gate.js';

/** The bytes of the field name `key`. */
const [KEY_0, KEY_1, KEY_2] = [0x6b, 0x65, 0x79];

/**
 * The routing key of a raw entry (its `key` field); an entry without one gets a key of its own
 * (`\0<id>`), so it goes straight to the runner (which dead-letters it) without blocking others.
 */
export function entryRoutingKey(id: string, fields: readonly Buffer[]): string {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as Buffer;
    // (byte by byte: cheaper than a Buffer comparison for three bytes, once per entry)
    if (name.length === 3 && name[0] === KEY_0 && name[1] === KEY_1 && name[2] === KEY_2) {
      return (fields[i + 1] as Buffer).toString();
    }
  }
  return `\u0000${id}`;
}

/** A buffered entry: its id and key, with its fields and delivery count for the runner. */
interface HeldEntry extends GatedEntry {
  readonly fields: Buffer[];
  readonly deliveryCount: number;
}

/**
 * Runs the entries of one shard with `ordering: 'key'`: the {@link KeyGate} decides, this drives
 * the handler calls (through a {@link MessageRunner} of its own: decode → handle → retries →
 * dead-letter) and reports what settled. The shard reader feeds it what its reads and claims
 * return ({@link offer}), pauses reading while {@link room} is 0, sends {@link takeAcks} with
 * its fenced acks, and drains it ({@link drain}) before a claim pass and before it releases
 * the shard.
 */
export class KeyedDispatcher {
  private gate: KeyGate<HeldEntry>;
  private acks: string[] = [];
  private failure: { error: unknown } | undefined;
  private wakers: Array<() => void> = [];
  private readonly handedAt = new Map<string, number>();
  /** Left pending by this gate: id → whether a handler call counted for it. */
  private readonly left = new Map<string, boolean>();

  /**
   * @param runner runs one entry; its context's signal must abort when `dispatch` does.
   * @param dispatch aborted by {@link lose} (and when an entry's handling hits the fence): the
   *   runner then ends permit waits and backoff sleeps at once and starts no handler call.
   */
  constructor(
    private readonly runner: MessageRunner,
    private readonly maxConcurrency: number,
    private readonly maxBuffered: number,
    private readonly dispatch: AbortController,
  ) {
    this.gate = new KeyGate<HeldEntry>(maxConcurrency, maxBuffered);
  }

  /** The highest entry id taken in (read or claimed) since the reader started. */
  get seenUpTo(): string | undefined {
    return this.gate.highestOffered;
  }

  /**
   * The entries handed to the handler and not settled as acknowledged or gone, each at the
   * delivery count it was last handed with: the claim pass counts a new delivery for an own
   * pending entry only when it is listed here at its current count (an entry that was read or
   * claimed but never handed — buffered behind its key, or over `maxConcurrency` — is not a
   * delivery the handler saw).
   */
  get handed(): ReadonlyMap<string, number> {
    return this.handedAt;
  }

  /** How many more entries may be taken in now (0: pause reading). */
  get room(): number {
    return this.gate.room;
  }

  /** True while entries are buffered or in flight. */
  get busy(): boolean {
    return this.gate.held > 0;
  }

  /** Records a handler call (wraps the reader's `handle`). */
  noteHanded(message: ShardMessage): void {
    this.handedAt.set(message.id, message.deliveryCount);
  }

  /**
   * After {@link drain}: the entries this gate leaves pending that no handler call counted for
   * (never handed, or stopped before their handler was called). The next owner's
   * claim counts a delivery for every entry it takes over; a reader giving the shard up in order
   * takes that one back first (the `uncount` script).
   */
  uncounted(): string[] {
    const ids: string[] = [];
    for (const [id, counted] of this.left) if (!counted) ids.push(id);
    return ids;
  }

  /** Entries that are gone from the shard (deleted or trimmed): nothing more to count. */
  forget(ids: readonly string[]): void {
    for (const id of ids) this.handedAt.delete(id);
  }

  /** Takes in entries (id order, as a read or a claim returned them) and dispatches what may start. */
  offer(entries: readonly RawStreamEntry[]): void {
    for (const entry of entries) {
      const id = entry[0].toString();
      const fields = entry[1];
      this.gate.offer({
        id,
        key: entryRoutingKey(id, fields),
        fields,
        deliveryCount: entry[2] ?? 1,
      });
    }
    this.pump();
  }

  /** The ids handled since the last call (each once; none after {@link lose}). */
  takeAcks(): string[] {
    const acks = this.acks;
    this.acks = [];
    return acks;
  }

  /** Rethrows (once) the first error an entry's handling hit (a Redis error, the fence). */
  throwIfFailed(): void {
    const failure = this.failure;
    if (failure === undefined) return;
    this.failure = undefined;
    throw failure.error;
  }

  /**
   * Resolves when an entry settles, after `timeoutMs`, or when `signal` aborts — whichever
   * comes first.
   */
  waitForSettle(timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.wakers.push(done);
    });
  }

  /**
   * Stops dispatching and waits until every in-flight entry settled. Buffered entries are
   * forgotten: they stay pending on this member, for the next claim pass or owner.
   */
  async drain(): Promise<void> {
    for (const entry of this.gate.close()) this.left.set(entry.id, false);
    while (this.gate.running > 0) {
      await new Promise<void>((resolve) => this.wakers.push(resolve));
    }
  }

  /** {@link drain}, then a fresh gate (before a claim pass replays the pending entries). */
  async reset(): Promise<void> {
    await this.drain();
    this.left.clear();
    // (the claim pass offers the pending entries again: the orphan check starts over too)
    this.gate = new KeyGate<HeldEntry>(this.maxConcurrency, this.maxBuffered);
    if (this.dispatch.signal.aborted) this.gate.lose();
  }

  /**
   * The shard was lost: nothing more is dispatched or acknowledged. Aborts the dispatch first,
   * so entries waiting for a permit or in retry backoff end at once, left pending (handler
   * calls already running still settle: {@link drain} waits for them).
   */
  lose(): void {
    this.dispatch.abort();
    this.gate.lose();
    this.acks = [];
    this.handedAt.clear();
  }

  private pump(): void {
    const gate = this.gate;
    for (let entry = gate.next(); entry !== undefined; entry = gate.next()) this.start(gate, entry);
  }

  private start(gate: KeyGate<HeldEntry>, entry: HeldEntry): void {
    const { id, fields, deliveryCount } = entry;
    let run: Promise<Outcome>;
    try {
      run = this.runner.run(id, fields, deliveryCount);
    } catch (error) {
      run = Promise.reject(error);
    }
    run.then(
      (outcome) => this.settle(gate, id, outcome),
      (error: unknown) => {
        this.failure ??= { error };
        // the fence moved: start nothing more before the read loop notices
        if (error instanceof FencedError) this.lose();
        this.settle(gate, id, 'error');
      },
    );
  }

  private settle(gate: KeyGate<HeldEntry>, id: string, outcome: Outcome | 'error'): void {
    gate.settle(id, outcome === 'stop-failed' ? 'stop' : outcome);
    // acknowledged (the acks go out before any claim pass) or gone: no longer pending
    if (outcome === 'ack' || outcome === 'skip') this.handedAt.delete(id);
    // (`stop-failed`: a handler call ran on this delivery — it failed, or was ended by the
    // give-up — so it stays counted)
    else this.left.set(id, outcome !== 'stop');
    for (const acked of gate.takeAcks()) this.acks.push(acked);
    const wakers = this.wakers;
    this.wakers = [];
    for (const wake of wakers) wake();
    if (gate === this.gate) this.pump();
  }
}
