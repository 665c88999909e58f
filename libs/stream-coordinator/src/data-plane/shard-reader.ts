import { FencedError } from '../errors/data-plane/fenced.error.js';
import { ReaderStoppedError } from '../errors/data-plane/reader-stopped.error.js';
import { ReaderWatchdogError } from '../errors/data-plane/reader-watchdog.error.js';
import { ShardReadRefusedError } from '../errors/data-plane/shard-read-refused.error.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';
import { backoffDelay, sleep } from './backoff.js';
import { BatchRunner } from './batch-runner.js';
import { toError } from './dead-letter.js';
import { MessageRunner, type Outcome } from './message-runner.js';
import type { ClaimReply, RawStreamEntry } from './raw-entry.types.js';
import { KeyedDispatcher } from './key-order/keyed-dispatcher.js';
import { ReaderConnection } from './reader-connection.js';
import { ORPHANS_PENDING, ShardCommands } from './shard-commands.js';
import type { ShardMessage } from './shard-message.js';
import {
  resolveShardReaderOptions,
  type ResolvedShardReaderOptions,
  type ShardReaderOptions,
} from './shard-reader.options.js';
import type {
  ShardLostReason,
  ShardReaderCounters,
  ShardReaderStatus,
} from './shard-reader.types.js';

/** Marks "the handler did not throw" (a handler may throw anything, `undefined` included). */
const NOT_THROWN: unique symbol = Symbol('not thrown');

/** What {@link corkSockets} needs of a socket. */
interface Corkable {
  cork(): void;
  uncork(): void;
}

/**
 * Corks the sockets a connection writes to (a standalone client's one, or every node of a
 * Cluster client), so that the commands issued until {@link uncorkSockets} leave in one write —
 * one packet, one read and one wake-up for Redis. Only sockets of `ready` clients are corked
 * (their commands are written at once); anything else just writes as usual.
 */
function corkSockets(connection: ReaderRedis): Corkable[] {
  const corked: Corkable[] = [];
  const clients = 'nodes' in connection ? connection.nodes('master') : [connection];
  for (const client of clients) {
    if (client.status !== 'ready') continue;
    const socket = (client as { stream?: Partial<Corkable> }).stream;
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') continue;
    socket.cork();
    corked.push(socket as Corkable);
  }
  return corked;
}

/** Undoes {@link corkSockets}: the buffered commands are written now. */
function uncorkSockets(corked: readonly Corkable[]): void {
  for (const socket of corked) socket.uncork();
}

/** Longest a stopping reader waits to remove its consumer from the group. */
const RELEASE_CONSUMER_TIMEOUT_MS = 1000;

/**
 * With `ordering: 'key'`, the shortest a read blocks while handlers run (their acks ride on the
 * next read, so a read blocks at most `maxAckDelayMs` then, but not less than this).
 */
const KEYED_MIN_BLOCK_MS = 10;

/** Where the read loop resumes after an error. */
type Phase = 'group' | 'claim' | 'read';

/**
 * Reads and handles one owned shard for one group, on its own dedicated connection.
 *
 * Life cycle: {@link start} → wait until the shard's fence names this member and its read gate
 * is open, and make sure the consumer group exists → take over the pending entries earlier owners
 * left (the `claim` script, in id order, handled before anything new) → read new entries until
 * {@link stop} or until the shard is lost. Each read turn is one round trip: the fenced ack of the
 * batch handled last (Lua, returns an integer) and, right behind it on the same connection, one
 * plain `XREADGROUP … BLOCK <blockMs> STREAMS <gate> <shard> > >` (no Lua: Redis hands the
 * entries over without converting them to Lua values, and the blocking read doubles as the wait
 * when the shard is idle).
 *
 * How reads are fenced without Lua: the coordinator keeps a read gate — an empty stream carrying
 * the group's consumer group — for the owner only, and deletes it in the same script that moves
 * the fence token. Redis checks every key's consumer group before it serves anything, so without
 * its gate a member reads nothing (`NOGROUP`), and a read blocked at that moment ends at once
 * (`UNBLOCKED`). Acks, claims and redeliveries stay fenced by the token, inside Lua.
 *
 * Guarantees:
 * - messages of the shard are handled strictly one after another, in entry order;
 * - an entry is acknowledged only after its handler resolved (acks of a batch ride on the next
 *   read, or are flushed after `maxAckDelayMs` during a slow batch), and every data-plane call
 *   is fenced: once the fence names someone else nothing more
 *   is read or acknowledged; the reader reports the shard lost through `onLost`;
 * - a failing message is retried with backoff (each retry is a Redis delivery, via XCLAIM)
 *   until `maxDeliveries`, then dead-lettered and acknowledged; an undecodable one at once;
 *   every delay of the reader is drawn with full jitter from [0, its capped exponential];
 * - Redis errors never end the reader: it keeps the shard, backs off, recreates its connection
 *   when needed (a call ends at once when its connection closes, and a watchdog replaces a
 *   connection whose call does not answer in time), and re-runs the claim phase so no entry
 *   stays stuck in its pending list; should a read's reply ever be lost without an error, the
 *   ack in front of every read sees the unseen pending entries and sends it there too;
 * - `stop()` is prompt (a blocked read is abandoned at once), waits for the in-flight handler,
 *   acknowledges what was handled and closes the connection.
 */
export class ShardReader {
  /** The options with defaults applied. */
  readonly options: ResolvedShardReaderOptions;
  /** Running totals. */
  readonly counters: ShardReaderCounters = {
    handled: 0,
    failed: 0,
    retried: 0,
    deadLettered: 0,
    dropped: 0,
    claimed: 0,
    missing: 0,
    watchdogFired: 0,
    connectionErrors: 0,
    connectionsCreated: 0,
  };

  private readonly commands: ShardCommands;
  private readonly connection: ReaderConnection;
  private readonly runner: MessageRunner;
  /** With `ordering: 'key'`: runs the shard's entries by key (else `undefined`). */
  private readonly keyed: KeyedDispatcher | undefined;
  /** Batch mode (`options.batch`): hands the entries to the batch handler instead. */
  private readonly batches: BatchRunner | undefined;
  private readonly abort = new AbortController();
  private currentStatus: ShardReaderStatus = 'idle';
  private running: Promise<void> | undefined;
  private acks: string[] = [];
  private busy: number | undefined;
  private progressAt = performance.now();
  private lastCallAt = performance.now();
  private progressDeadline = Number.POSITIVE_INFINITY;
  private consecutiveErrors = 0;
  private lost: ShardLostReason | undefined;
  /**
   * Entries pending on this member from this id on were left by an earlier reader of the same
   * member id and not taken over by this one yet (see the `claim` script); `undefined` once
   * its first claim pass went through.
   */
  private foreignFrom: string | undefined = '0-0';
  /** Pending entries from {@link foreignFrom} on that a claim whose reply was lost may have taken. */
  private maybeTaken = 0;

  /** @throws ShardReaderOptionsError for invalid options. */
  constructor(options: ShardReaderOptions) {
    this.options = resolveShardReaderOptions(options);
    this.commands = new ShardCommands(this.options.key, this.options.group, this.options.memberId);
    this.connection = new ReaderConnection(
      this.options.createConnection,
      (error) => {
        this.options.logger.debug?.(`${this.label}: connection error: ${error.message}`);
      },
      this.abort.signal,
    );
    this.runner = new MessageRunner({
      options: this.options,
      commands: this.commands,
      counters: this.counters,
      signal: this.abort.signal,
      call: (operation) => this.call(operation),
      lastProgressAt: () => this.progressAt,
      handlerStarted: (at) => {
        this.busy = at;
      },
      handlerEnded: (at) => {
        this.busy = undefined;
        this.progressAt = at;
        this.progressDeadline = at + 2 * this.options.watchdogGraceMs;
      },
      touch: (expectedMs) => this.touch(expectedMs),
    });
    this.keyed = this.options.ordering === 'key' ? this.createKeyedDispatcher() : undefined;
    this.batches = this.createBatchRunner();
  }

  /**
   * `ordering: 'key'`: a runner of its own for the dispatcher (its handler calls overlap: the
   * reader counts as busy while any runs), its handler wrapped to note what was handed.
   */
  private createKeyedDispatcher(): KeyedDispatcher {
    let running = 0;
    const handle = this.options.handle;
    let dispatcher: KeyedDispatcher | undefined;
    // aborted when the shard is lost (markLost, or the fence hit inside a dispatched entry)
    const dispatch = new AbortController();
    const runner = new MessageRunner({
      options: {
        ...this.options,
        handle: (message) => {
          dispatcher?.noteHanded(message as ShardMessage);
          return handle(message);
        },
      },
      commands: this.commands,
      counters: this.counters,
      signal: AbortSignal.any([this.abort.signal, dispatch.signal]),
      call: (operation) => this.call(operation),
      lastProgressAt: () => this.progressAt,
      handlerStarted: (at) => {
        if (running++ === 0) this.busy = at;
      },
      handlerEnded: (at) => {
        if (--running === 0) this.busy = undefined;
        this.progressAt = at;
        this.progressDeadline = at + 2 * this.options.watchdogGraceMs;
      },
      touch: (expectedMs) => this.touch(expectedMs),
    });
    dispatcher = new KeyedDispatcher(
      runner,
      this.options.maxConcurrency,
      this.options.maxBufferedEntries,
      dispatch,
    );
    return dispatcher;
  }

  private createBatchRunner(): BatchRunner | undefined {
    const { batch, handleBatch, watchdogGraceMs } = this.options;
    if (batch === undefined || handleBatch === undefined) return undefined;
    const runner = this.runner;
    return new BatchRunner({
      options: this.options,
      commands: this.commands,
      counters: this.counters,
      signal: this.abort.signal,
      call: (operation) => this.call(operation),
      lastProgressAt: () => this.progressAt,
      handlerStarted: (at) => {
        this.busy = at;
      },
      handlerEnded: (at) => {
        this.busy = undefined;
        this.progressAt = at;
        this.progressDeadline = at + 2 * watchdogGraceMs;
      },
      touch: (expectedMs) => this.touch(expectedMs),
      batch,
      handleBatch,
      runner,
      ack: async (ids) => {
        for (const id of ids) this.acks.push(id);
        if (this.progressAt - this.lastCallAt >= this.options.maxAckDelayMs) await this.flushAcks();
      },
      readMore: (count, blockMs) =>
        this.guarded((c) => this.commands.read(c, count, blockMs), blockMs + watchdogGraceMs, true),
    });
  }

  /** Where the reader is in its life. */
  get status(): ShardReaderStatus {
    return this.currentStatus;
  }

  /** `performance.now()` of the last loop turn (a read, a wait returning, a handled message). */
  get lastProgressAt(): number {
    return this.progressAt;
  }

  /**
   * `performance.now()` at which the current handler call started (or began waiting for a
   * concurrency permit); `undefined` when none runs.
   */
  get handlerRunningSince(): number | undefined {
    return this.busy;
  }

  /** Why the shard was lost, once it was. */
  get lostReason(): ShardLostReason | undefined {
    return this.lost;
  }

  /**
   * True when the read loop should have made progress by `now` and has not — even its
   * watchdog did not bring it back (time inside a handler does not count: the rebalance timeout
   * governs handlers; see {@link handlerRunningSince}).
   */
  isStalled(now: number = performance.now()): boolean {
    const status = this.currentStatus;
    if (status === 'idle' || status === 'stopped' || status === 'lost') return false;
    if (this.busy !== undefined) return false;
    return now > this.progressDeadline;
  }

  /** Starts reading (once; later calls and calls after `stop()` do nothing). */
  start(): void {
    if (this.running !== undefined || this.abort.signal.aborted) return;
    this.touch(0);
    this.running = this.run();
  }

  /**
   * Stops reading: abandons a blocked read at once, lets the in-flight handler settle (never
   * resolves while one runs), acknowledges what was handled (fenced), closes the connection.
   * Idempotent; resolves when the reader has ended (at once if it never started or was lost).
   */
  stop(): Promise<void> {
    if (!this.abort.signal.aborted) {
      if (this.currentStatus !== 'lost' && this.currentStatus !== 'stopped') {
        this.currentStatus = this.running === undefined ? 'stopped' : 'stopping';
      }
      this.abort.abort();
    }
    return this.running ?? Promise.resolve();
  }

  /** Resolves when the reader has ended (stopped or lost). */
  whenEnded(): Promise<void> {
    return this.running ?? Promise.resolve();
  }

  private get label(): string {
    return `${this.options.stream}[${this.options.shard}] (${this.options.key})`;
  }

  private async run(): Promise<void> {
    try {
      if (await this.acquire(true)) await this.loop();
    } catch (error) {
      if (error instanceof FencedError) this.markLost(error);
      else
        this.options.logger.error(
          `${this.label}: reader failed unexpectedly: ${toError(error).message}`,
        );
    }
    await this.finish();
  }

  /**
   * Waits until the fence names this member and its read gate is open (the coordinator may still
   * be writing them), creating the shard's consumer group if it is missing. Resolves `false` when
   * the reader stops first; rejects with {@link FencedError} when the fence names someone else.
   * Waiting for a fence that names another member counts as a refusal too, so a reader started
   * before the grant landed keeps polling (see the first call's `initial`).
   */
  private async acquire(initial: boolean): Promise<boolean> {
    if (initial) this.setStatus('starting');
    let refusals = 0;
    let gateRefusals = 0;
    while (!this.abort.signal.aborted) {
      let waitingFor: string;
      try {
        // `startFrom` decides only on the first acquire: a consumer group that goes missing
        // while the shard is owned (deleted by hand) is re-created at the start, so nothing
        // written meanwhile is skipped.
        const start = initial && this.options.startFrom === 'latest' ? '$' : '0';
        if ((await this.call((c) => this.commands.acquire(c, start))) === 'ready') return true;
        waitingFor = `its read gate ${this.commands.gateKey}`;
        // The coordinator writes token and gate in one script, so this lasts only if the gate
        // was removed by hand, or the coordinator predates read gates.
        if (++gateRefusals % 200 === 20) {
          this.options.logger.warn(
            `${this.label}: the fence names ${this.options.memberId} but its read gate ${this.commands.gateKey} does not exist; waiting (a coordinator that writes read gates creates it on the next full heartbeat)`,
          );
        }
      } catch (error) {
        if (!(error instanceof FencedError)) {
          if (!this.abort.signal.aborted) await this.recover(toError(error));
          continue;
        }
        // Later acquires run while the shard is ours: a moved fence means it is lost.
        if (!initial) throw error;
        waitingFor = `the fence to name ${this.options.memberId} (owner ${error.currentOwner ?? '(none)'})`;
      }
      refusals++;
      if (refusals === 1 || refusals % 50 === 0) {
        this.options.logger.debug?.(`${this.label}: waiting for ${waitingFor}`);
      }
      const delay = backoffDelay(this.options.acquireBackoff, refusals, this.options.random);
      this.touch(delay);
      await sleep(delay, this.abort.signal);
    }
    return false;
  }

  private async loop(): Promise<void> {
    let phase: Phase = 'claim';
    while (!this.abort.signal.aborted) {
      try {
        if (phase === 'group') {
          if (!(await this.acquire(false))) break;
          phase = 'claim';
        }
        if (phase === 'claim') {
          this.setStatus('claiming');
          // (key order: what is in flight settles first; the claim replays the rest in id order)
          if (this.keyed !== undefined) await this.keyed.reset();
          await this.claimPending();
          if (this.abort.signal.aborted) break;
          this.setStatus('reading');
          phase = 'read';
        }
        if (await this.readOnce()) phase = 'claim';
      } catch (error) {
        if (error instanceof FencedError) throw error;
        if (this.abort.signal.aborted) break;
        if (error instanceof ShardReadRefusedError) {
          // Gate gone (the fence moved: acquire reports the loss), or the consumer group
          // missing (acquire re-creates it). Nothing was delivered.
          this.options.logger.debug?.(`${this.label}: ${error.message}`);
          phase = 'group';
          continue;
        }
        phase = error instanceof Error && error.message.startsWith('NOGROUP') ? 'group' : 'claim';
        await this.recover(toError(error));
      }
    }
  }

  /** Claim phase: every pending entry of the group on this shard, oldest first. */
  private async claimPending(): Promise<void> {
    let cursor = '0-0';
    do {
      let count = this.options.batchSize;
      if (this.keyed !== undefined) {
        if (!(await this.waitForRoom(this.keyed))) return;
        count = Math.min(count, this.keyed.room);
      }
      this.collectAcks();
      if (this.acks.length > 0) await this.flushAcks();
      const keyed = this.keyed;
      const handed = keyed === undefined ? this.runner.lastHanded : undefined;
      const foreignFrom = this.foreignFrom;
      const maybeTaken = this.maybeTaken;
      let reply: ClaimReply;
      try {
        reply = await this.call((c) =>
          this.commands.claim(c, cursor, count, {
            ...(handed === undefined ? {} : { handed }),
            ...(foreignFrom === undefined ? {} : { foreignFrom, maybeTaken }),
            ...(keyed === undefined ? {} : { keyOrder: { handed: keyed.handed } }),
          }),
        );
      } catch (error) {
        // it may have run, its reply lost: the entries it took are counted already
        if (foreignFrom !== undefined) this.maybeTaken = this.options.batchSize;
        throw error;
      }
      // everything below the next cursor is now taken over by this reader (its first pass
      // through the pending list makes the member's own entries its own)
      if (foreignFrom !== undefined) {
        this.foreignFrom = reply.cursor === '0-0' ? undefined : reply.cursor;
        this.maybeTaken = 0;
      }
      keyed?.forget(reply.deletedIds);
      if (reply.deletedIds.length > 0) {
        this.counters.missing += reply.deletedIds.length;
        this.options.logger.warn(
          `${this.label}: ${reply.deletedIds.length} pending entries were deleted or trimmed before they were handled: ${reply.deletedIds.slice(0, 10).join(', ')}`,
        );
      }
      this.counters.claimed += reply.entries.length;
      await this.handleBatch(reply.entries);
      cursor = reply.cursor;
    } while (cursor !== '0-0' && !this.abort.signal.aborted);
  }

  /**
   * One read turn: the fenced ack of the last batch and the gated blocking read, sent together
   * (one round trip), then the batch read is handled. Resolves `true` when the claim phase must
   * run again (entries are pending on this member that it never saw).
   */
  private async readOnce(): Promise<boolean> {
    let { batchSize, blockMs } = this.options;
    const watchdogGraceMs = this.options.watchdogGraceMs;
    const keyed = this.keyed;
    if (keyed !== undefined) {
      if (!(await this.waitForRoom(keyed))) return false;
      batchSize = Math.min(batchSize, keyed.room);
      if (keyed.busy) {
        blockMs = Math.min(blockMs, Math.max(KEYED_MIN_BLOCK_MS, this.options.maxAckDelayMs));
      }
    }
    this.collectAcks();
    const acks = this.acks;
    const count = acks.length; // what this turn sends: later pushes go to the next one
    let orphans = false;
    let entries: RawStreamEntry[];
    try {
      entries = await this.guarded(
        async (c) => {
          const sentAt = performance.now();
          // both commands in one socket write (one packet, one read and one wake-up for Redis)
          const corked = corkSockets(c);
          let acked: Promise<number>;
          let read: Promise<RawStreamEntry[]>;
          try {
            const sent = firstOf(acks, count);
            acked =
              keyed === undefined
                ? this.commands.ackBeforeRead(c, sent)
                : this.commands.ackBeforeRead(c, sent, keyed.seenUpTo ?? '');
            read = this.commands.read(c, batchSize, blockMs);
          } finally {
            uncorkSockets(corked);
          }
          let reply: number;
          try {
            reply = await acked;
          } catch (error) {
            read.catch(() => undefined);
            throw error;
          }
          this.acknowledged(acks, count, sentAt);
          if (reply !== ORPHANS_PENDING) return read;
          // Abandon the read (it may be blocked): the claim phase takes its entries over too.
          orphans = true;
          read.catch(() => undefined);
          this.connection.drop(c);
          return [];
        },
        blockMs + watchdogGraceMs,
        true,
      );
    } catch (error) {
      if (error instanceof ReaderStoppedError) return false;
      throw error;
    }
    if (orphans) {
      this.options.logger.warn(
        `${this.label}: entries were delivered to ${this.options.memberId} but not seen (a reply lost on a broken connection); reclaiming them`,
      );
      return true;
    }
    if (entries.length > 0) await this.handleBatch(entries, true);
    return false;
  }

  private async handleBatch(entries: readonly RawStreamEntry[], fill = false): Promise<void> {
    if (this.batches !== undefined) {
      await this.batches.handle(entries, fill);
      return;
    }
    if (this.keyed !== undefined) {
      // key order: dispatched as their keys free up; the read loop goes on meanwhile
      this.keyed.offer(entries);
      return;
    }
    const runner = this.runner;
    const handle = this.options.handle;
    const signal = this.abort.signal;
    const beforeHandle = this.options.beforeHandle;
    for (let i = 0; i < entries.length; i++) {
      // (the gate may stop this reader, e.g. when the member's lease ran out during a stall)
      beforeHandle?.(this.progressAt);
      if (signal.aborted) return;
      const entry = entries[i] as RawStreamEntry;
      const id = entry[0].toString(); // ASCII; no argument: Node's fast path
      const fields = entry[1];
      const message = runner.prepare(id, fields, entry[2] ?? 1);
      let outcome: Outcome;
      if (message === null) outcome = await runner.run(id, fields, entry[2] ?? 1);
      else if (message === undefined) {
        outcome = await runner.deliver(id, fields, runner.lastPrepared as ShardMessage);
      } else {
        // the fast path: one handler call, awaited here (see MessageRunner)
        let thrown: unknown = NOT_THROWN;
        try {
          const pending = handle(message);
          if (pending !== undefined) await pending;
        } catch (error) {
          thrown = error;
        }
        // (a failed read of the payload goes to `failed` too, even when the handler returned)
        outcome =
          thrown === NOT_THROWN && message.payloadError === undefined
            ? runner.succeeded(message)
            : await runner.failed(id, fields, message, thrown);
      }
      if (outcome === 'ack') {
        this.acks.push(id);
        if (this.progressAt - this.lastCallAt >= this.options.maxAckDelayMs) await this.flushAcks();
      } else if (outcome !== 'skip') return;
    }
  }

  /**
   * `ordering: 'key'`: waits until the dispatcher has room for more entries, flushing the acks
   * of what settled meanwhile every `maxAckDelayMs` (a fenced call: it notices a lost shard).
   * Resolves `false` when the reader stops first; rethrows an error an entry's handling hit.
   */
  private async waitForRoom(keyed: KeyedDispatcher): Promise<boolean> {
    const signal = this.abort.signal;
    const { maxAckDelayMs } = this.options;
    keyed.throwIfFailed();
    while (keyed.room === 0) {
      const waitMs = Math.max(KEYED_MIN_BLOCK_MS, maxAckDelayMs);
      this.touch(waitMs);
      await keyed.waitForSettle(waitMs, signal);
      if (signal.aborted) return false;
      keyed.throwIfFailed();
      this.collectAcks();
      if (this.acks.length > 0 && performance.now() - this.lastCallAt >= maxAckDelayMs) {
        await this.flushAcks();
      }
    }
    return !signal.aborted;
  }

  /** `ordering: 'key'`: moves the dispatcher's settled acks to the ones to send next. */
  private collectAcks(): void {
    if (this.keyed === undefined) return;
    for (const id of this.keyed.takeAcks()) this.acks.push(id);
  }

  private async flushAcks(): Promise<void> {
    this.collectAcks();
    const acks = this.acks;
    const count = acks.length;
    const sentAt = performance.now();
    await this.call(async (c) => {
      await this.commands.ack(c, firstOf(acks, count));
      // (here, not after the call: a reply that comes after the watchdog gave up still reports)
      this.acknowledged(acks, count, sentAt);
    });
  }

  /**
   * A fenced ack of the first `count` ids of `list` (the ack list as it was sent; lists only grow
   * until replaced) sent at `sentAt` succeeded: forgets those ids and tells the `acked` hook, and
   * keeps what was collected after the send for the next ack. Its reply can come after a later
   * ack already carried the same ids (a stopping reader's final flush after a stall: ioredis
   * still reads a reply that arrived before the connection was dropped, or the other reply came
   * first); its ids are then reported again with its own, earlier or later, send time (the hook
   * allows repeats) and only those still listed are forgotten.
   */
  private acknowledged(list: string[], count: number, sentAt: number): void {
    if (count === 0) return;
    let done: readonly string[];
    if (this.acks === list) {
      done = firstOf(list, count);
      this.acks = list.length === count ? [] : list.slice(count);
    } else {
      done = firstOf(list, count);
      const sent = new Set(done);
      if (this.acks.some((id) => sent.has(id))) this.acks = this.acks.filter((id) => !sent.has(id));
    }
    if (this.options.hooks.acked === undefined) return;
    try {
      this.options.hooks.acked(done, sentAt);
    } catch {
      // hooks must not disturb the reader
    }
  }

  /** A short Redis call under the watchdog. */
  private call<T>(operation: (connection: ReaderRedis) => Promise<T>): Promise<T> {
    return this.guarded(operation, this.options.watchdogGraceMs);
  }

  private async guarded<T>(
    operation: (connection: ReaderRedis) => Promise<T>,
    timeoutMs: number,
    abortable = false,
  ): Promise<T> {
    this.touch(timeoutMs);
    try {
      const value = await this.connection.run(operation, timeoutMs, abortable);
      this.consecutiveErrors = 0;
      this.counters.connectionsCreated = this.connection.created;
      this.touch(0);
      this.lastCallAt = this.progressAt;
      return value;
    } catch (error) {
      this.counters.connectionsCreated = this.connection.created;
      if (error instanceof ReaderWatchdogError) {
        this.counters.watchdogFired++;
        try {
          this.options.hooks.watchdog?.();
        } catch {
          // hooks must not disturb the reader
        }
      }
      throw error;
    }
  }

  /** After a Redis error: count, log, maybe replace the connection, back off. */
  private async recover(error: Error): Promise<void> {
    this.consecutiveErrors++;
    this.counters.connectionErrors++;
    try {
      this.options.hooks.connectionError?.(error);
    } catch {
      // hooks must not disturb the reader
    }
    const text = `${this.label}: Redis call failed (${this.consecutiveErrors} in a row), retrying: ${error.message}`;
    if (this.consecutiveErrors === 1 || this.consecutiveErrors % 20 === 0)
      this.options.logger.warn(text);
    else this.options.logger.debug?.(text);
    if (this.connection.isEnded() || this.consecutiveErrors % 3 === 0) this.connection.drop();
    const delay = backoffDelay(
      this.options.reconnectBackoff,
      this.consecutiveErrors,
      this.options.random,
    );
    this.touch(delay);
    await sleep(delay, this.abort.signal);
  }

  private markLost(error: FencedError): void {
    this.lost = { code: 'FENCED', currentOwner: error.currentOwner, message: error.message };
    // (this.acks is kept: nothing sends it now; an ack in flight that Redis applied before the
    // fence moved is reported when its reply comes either way)
    // (before finish drains it: nothing more starts, permit waits and backoff sleeps end now)
    this.keyed?.lose();
    this.currentStatus = 'lost';
    this.options.logger.warn(`${this.label}: shard lost: ${error.message}`);
  }

  /** Final acks (unless lost), close the connection, report. */
  private async finish(): Promise<void> {
    if (this.keyed !== undefined) {
      // every in-flight entry settles before the shard is released (revoke, shutdown, loss)
      await this.keyed.drain();
      if (this.lost === undefined) this.collectAcks();
    }
    if (this.lost === undefined && this.acks.length > 0) {
      try {
        await this.flushAcks();
      } catch (error) {
        this.options.logger.warn(
          `${this.label}: could not acknowledge ${this.acks.length} handled entries on stop; they will be redelivered to the next owner: ${toError(error).message}`,
        );
      }
    }
    if (this.lost === undefined && this.keyed !== undefined) await this.uncountLeft(this.keyed);
    await this.releaseConsumer();
    await this.connection.close();
    const lost = this.lost;
    this.currentStatus = lost === undefined ? 'stopped' : 'lost';
    if (lost === undefined) return;
    try {
      this.options.hooks.lost?.(lost);
    } catch {
      // hooks must not disturb the reader
    }
    try {
      this.options.onLost?.(lost);
    } catch (error) {
      this.options.logger.error(`${this.label}: onLost callback threw: ${toError(error).message}`);
    }
  }

  /**
   * `ordering: 'key'`, giving the shard up in order: takes a delivery off each entry left pending
   * that no handler call counted for, since the next owner's claim counts one for every entry it
   * takes over (see the `uncount` and `claim` scripts). Best effort, skipped while Redis calls fail:
   * an entry left counted is only over-counted by one.
   */
  private async uncountLeft(keyed: KeyedDispatcher): Promise<void> {
    const ids = keyed.uncounted();
    if (ids.length === 0 || this.consecutiveErrors > 0 || this.connection.isDown()) return;
    try {
      const { deletedIds } = await this.connection.run(
        (c) => this.commands.uncount(c, ids),
        Math.min(RELEASE_CONSUMER_TIMEOUT_MS, this.options.watchdogGraceMs),
      );
      if (deletedIds.length > 0) {
        this.counters.missing += deletedIds.length;
        this.options.logger.warn(
          `${this.label}: ${deletedIds.length} pending entries were deleted or trimmed before they were handled: ${deletedIds.slice(0, 10).join(', ')}`,
        );
      }
    } catch (error) {
      this.options.logger.debug?.(
        `${this.label}: could not take back the deliveries of ${ids.length} entries left unhandled: ${toError(error).message}`,
      );
    }
  }

  /**
   * On the way out: removes this member's consumer from the shard's consumer group if nothing is
   * pending on it (entries left pending keep it, for the next owner to claim). Best effort: a
   * consumer left behind is cleaned up by a later stop of this member, or stays as an empty one.
   * Skipped while Redis calls fail (stopping must not wait for Redis to come back), and bounded
   * to one second.
   */
  private async releaseConsumer(): Promise<void> {
    if (this.consecutiveErrors > 0 || this.connection.isDown()) return;
    try {
      // (not through the watchdog's counters and hooks: this is no read-path failure)
      const outcome = await this.connection.run(
        (c) => this.commands.releaseConsumer(c),
        Math.min(RELEASE_CONSUMER_TIMEOUT_MS, this.options.watchdogGraceMs),
      );
      if (outcome === 'kept') {
        this.options.logger.debug?.(
          `${this.label}: consumer ${this.options.memberId} kept (entries are pending on it)`,
        );
      }
    } catch (error) {
      this.options.logger.debug?.(
        `${this.label}: could not remove consumer ${this.options.memberId} from group ${this.options.group}: ${toError(error).message}`,
      );
    }
  }

  private setStatus(status: ShardReaderStatus): void {
    if (this.abort.signal.aborted || this.currentStatus === 'lost') return;
    this.currentStatus = status;
  }

  private touch(expectedMs: number): void {
    const now = performance.now();
    this.progressAt = now;
    this.progressDeadline = now + expectedMs + 2 * this.options.watchdogGraceMs;
  }
}

/** The first `count` items of `list` (the list itself when that is all of it). */
function firstOf(list: string[], count: number): string[] {
  return list.length === count ? list : list.slice(0, count);
}
