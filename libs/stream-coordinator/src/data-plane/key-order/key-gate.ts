import { compareEntryIds } from './entry-id-order.js';

/**
 * How one dispatched entry ended: `ack` — handled (or dead-lettered / dropped), acknowledge it;
 * `skip` — it vanished while being retried, nothing to acknowledge; `stop` — left pending (the
 * shard is being given up); `error` — its handling hit an error (Redis, the fence), left pending.
 */
export type KeyGateOutcome = 'ack' | 'skip' | 'stop' | 'error';

/** One buffered entry of a shard: its id and its routing key. */
export interface GatedEntry {
  readonly id: string;
  readonly key: string;
}

/**
 * The decision logic of key-ordered dispatch inside one shard (`ordering: 'key'`): pure, no
 * I/O, no timers, no Nest.
 *
 * Entries are offered in id order (the order the shard's reads and claims return them). An
 * entry is dispatched as soon as no earlier entry of the same key is in flight or still
 * buffered, and fewer than `maxConcurrency` entries are in flight: each key keeps strict entry
 * order, different keys overlap. An entry whose handling did not end in `ack` or `skip` (`stop`,
 * `error`) blocks its key for the rest of this gate's life — later entries of that key stay
 * buffered (and pending in Redis), to be replayed in id order by the next claim pass or owner.
 *
 * Acks: only an entry that settled `ack` is handed out by {@link takeAcks}, at most once; none
 * after {@link lose}. {@link close} (revoke, shutdown, self-fence, a reset before a claim pass)
 * stops all dispatching; the entries in flight still settle.
 */
export class KeyGate<E extends GatedEntry = GatedEntry> {
  /** Per key with entries buffered, in flight or blocked: its buffered entries, its state. */
  private readonly keys = new Map<string, KeyQueue<E>>();
  /**
   * The keys whose first buffered entry may start now (not in flight, not blocked), a min-heap
   * by that entry's offer order: the next entry to start is its top (no scan of the buffer).
   */
  private readonly ready: Array<KeyQueue<E>> = [];
  private readonly inFlight = new Map<string, KeyQueue<E>>();
  private buffered = 0;
  private offered = 0;
  private acks: string[] = [];
  private closed = false;
  private lostOwnership = false;
  private lastOffered: string | undefined;

  /**
   * @param maxConcurrency most entries in flight at once (≥ 1).
   * @param maxBuffered most entries held (buffered + in flight) before reads pause (≥ 1).
   * @throws RangeError for bounds that are not positive integers.
   */
  constructor(
    readonly maxConcurrency: number,
    readonly maxBuffered: number,
  ) {
    for (const [name, value] of [
      ['maxConcurrency', maxConcurrency],
      ['maxBuffered', maxBuffered],
    ] as const) {
      if (!Number.isInteger(value) || value < 1) {
        throw new RangeError(`KeyGate ${name} must be a positive integer, got ${String(value)}`);
      }
    }
  }

  /** Entries held: buffered plus in flight. */
  get held(): number {
    return this.buffered + this.inFlight.size;
  }

  /** Entries in flight (dispatched, not settled). */
  get running(): number {
    return this.inFlight.size;
  }

  /** How many more entries may be offered before the cap is reached (0: pause reading). */
  get room(): number {
    return Math.max(0, this.maxBuffered - this.held);
  }

  /** True once {@link close} was called. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** The highest id offered so far (`undefined`: none). */
  get highestOffered(): string | undefined {
    return this.lastOffered;
  }

  /**
   * Buffers an entry. Ids must come in increasing order; an entry at or below the highest one
   * offered (a duplicate delivery) is ignored and `false` returned. Nothing is buffered once closed.
   */
  offer(entry: E): boolean {
    if (this.closed) return false;
    if (this.lastOffered !== undefined && compareEntryIds(entry.id, this.lastOffered) <= 0) {
      return false;
    }
    this.lastOffered = entry.id;
    let queue = this.keys.get(entry.key);
    if (queue === undefined) {
      queue = { key: entry.key, entries: [], orders: [], active: false, blocked: false };
      this.keys.set(entry.key, queue);
    }
    queue.entries.push(entry);
    queue.orders.push(this.offered++);
    this.buffered++;
    if (queue.entries.length === 1 && !queue.active && !queue.blocked) this.pushReady(queue);
    return true;
  }

  /**
   * The next entry to dispatch, now marked in flight; `undefined` when none may start (all
   * slots taken, every buffered key busy or blocked, or the gate closed). Call it until it
   * returns `undefined`.
   */
  next(): E | undefined {
    if (this.closed || this.inFlight.size >= this.maxConcurrency) return undefined;
    // (a key's first buffered entry is its earliest: the earliest of those of free keys starts)
    const queue = this.popReady();
    if (queue === undefined) return undefined;
    const entry = queue.entries.shift() as E;
    queue.orders.shift();
    this.buffered--;
    queue.active = true;
    this.inFlight.set(entry.id, queue);
    return entry;
  }

  /**
   * Records how the in-flight entry `id` ended.
   *
   * @throws RangeError when `id` is not in flight (settled twice, never dispatched).
   */
  settle(id: string, outcome: KeyGateOutcome): void {
    const queue = this.inFlight.get(id);
    if (queue === undefined) throw new RangeError(`KeyGate: entry ${id} is not in flight`);
    this.inFlight.delete(id);
    queue.active = false;
    if (outcome === 'ack') {
      if (!this.lostOwnership) this.acks.push(id);
    } else if (outcome !== 'skip') {
      queue.blocked = true;
      return;
    }
    if (queue.entries.length > 0) {
      if (!this.closed) this.pushReady(queue);
    } else {
      this.keys.delete(queue.key);
    }
  }

  /** The ids to acknowledge now (each one once). */
  takeAcks(): string[] {
    const acks = this.acks;
    this.acks = [];
    return acks;
  }

  /**
   * Stops dispatching for good and forgets the buffered entries (they stay pending in Redis for
   * the next claim pass or owner), returning them. In-flight entries still settle.
   */
  close(): E[] {
    this.closed = true;
    const left: Array<[order: number, entry: E]> = [];
    for (const queue of this.keys.values()) {
      for (let i = 0; i < queue.entries.length; i++) {
        left.push([queue.orders[i] as number, queue.entries[i] as E]);
      }
      queue.entries = [];
      queue.orders = [];
    }
    this.ready.length = 0;
    this.buffered = 0;
    return left.sort((a, b) => a[0] - b[0]).map(([, entry]) => entry);
  }

  /** The shard was lost: closes the gate and acknowledges nothing more. */
  lose(): void {
    this.lostOwnership = true;
    this.acks = [];
    this.close();
  }

  private pushReady(queue: KeyQueue<E>): void {
    const heap = this.ready;
    let i = heap.length;
    heap.push(queue);
    const order = queue.orders[0] as number;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const above = heap[parent] as KeyQueue<E>;
      if ((above.orders[0] as number) <= order) break;
      heap[i] = above;
      i = parent;
    }
    heap[i] = queue;
  }

  private popReady(): KeyQueue<E> | undefined {
    const heap = this.ready;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    const order = last.orders[0] as number;
    const size = heap.length;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      const right = child + 1;
      if (
        right < size &&
        ((heap[right] as KeyQueue<E>).orders[0] as number) <
          ((heap[child] as KeyQueue<E>).orders[0] as number)
      ) {
        child = right;
      }
      const below = heap[child] as KeyQueue<E>;
      if ((below.orders[0] as number) >= order) break;
      heap[i] = below;
      i = child;
    }
    heap[i] = last;
    return top;
  }
}

/** One key's buffered entries (oldest first, with their offer order) and its state. */
interface KeyQueue<E> {
  readonly key: string;
  entries: E[];
  orders: number[];
  /** An entry of the key is in flight. */
  active: boolean;
  /** An entry of the key ended in `stop` or `error`: nothing more of it starts. */
  blocked: boolean;
}
