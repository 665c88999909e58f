import type { RedisConnection } from '../redis/redis-connection.types.js';
import { backoffDelay, sleep } from './backoff.js';
import { toError } from './dead-letter.js';
import { FencedError } from './fenced.error.js';
import { MessageRunner } from './message-runner.js';
import type { RawStreamEntry } from './raw-entry.types.js';
import { ReaderConnection, ReaderStoppedError, ReaderWatchdogError } from './reader-connection.js';
import { ShardCommands } from './shard-commands.js';
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

/** Where the read loop resumes after an error. */
type Phase = 'group' | 'claim' | 'read';

/**
 * Reads and handles one owned shard for one group, on its own dedicated connection.
 *
 * Life cycle: {@link start} → wait until the shard's fence names this member and make sure the
 * consumer group exists → take over the pending entries earlier owners left (XAUTOCLAIM, in id
 * order, handled before anything new) → read new entries (`ackAndRead`, then `XREAD BLOCK` on
 * the stream's last id when there is nothing new) until {@link stop} or until the shard is lost.
 *
 * Guarantees:
 * - messages of the shard are handled strictly one after another, in entry order;
 * - an entry is acknowledged only after its handler resolved (acks of a batch ride on the next
 *   read, or are flushed after `maxAckDelayMs` during a slow batch), and every data-plane call
 *   is fenced: once the fence names someone else nothing more
 *   is read or acknowledged; the reader reports the shard lost through `onLost`;
 * - a failing message is retried with backoff (each retry is a Redis delivery, via XCLAIM)
 *   until `maxDeliveries`, then dead-lettered and acknowledged; an undecodable one at once;
 * - Redis errors never end the reader: it keeps the shard, backs off, recreates its connection
 *   when needed (a watchdog replaces a connection whose call does not answer in time), and
 *   re-runs the claim phase so no entry stays stuck in its pending list;
 * - `stop()` is prompt (a blocked read is abandoned at once), waits for the in-flight handler,
 *   acknowledges what was handled and closes the connection.
 *
 * @publicApi
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
  private readonly abort = new AbortController();
  private currentStatus: ShardReaderStatus = 'idle';
  private running: Promise<void> | undefined;
  private acks: string[] = [];
  /** The last id this member read from the group (its position), when known. */
  private position: string | undefined;
  private busy: number | undefined;
  private progressAt = performance.now();
  private lastCallAt = performance.now();
  private progressDeadline = Number.POSITIVE_INFINITY;
  private consecutiveErrors = 0;
  private lost: ShardLostReason | undefined;

  /** @throws ShardReaderOptionsError for invalid options. */
  constructor(options: ShardReaderOptions) {
    this.options = resolveShardReaderOptions(options);
    this.commands = new ShardCommands(this.options.key, this.options.group, this.options.memberId);
    this.connection = new ReaderConnection(this.options.createConnection, (error) => {
      this.options.logger.debug?.(`${this.label}: connection error: ${error.message}`);
    });
    this.runner = new MessageRunner({
      options: this.options,
      commands: this.commands,
      counters: this.counters,
      signal: this.abort.signal,
      call: (operation) => this.call(operation),
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
      if (await this.acquire()) await this.loop();
    } catch (error) {
      if (error instanceof FencedError) this.markLost(error);
      else
        this.options.logger.error(
          `${this.label}: reader failed unexpectedly: ${toError(error).message}`,
        );
    }
    await this.finish();
  }

  /** Waits until the fence names this member (the coordinator may still be writing it). */
  private async acquire(): Promise<boolean> {
    this.setStatus('starting');
    let refusals = 0;
    while (!this.abort.signal.aborted) {
      try {
        await this.call((c) => this.commands.acquire(c));
        return true;
      } catch (error) {
        if (!(error instanceof FencedError)) {
          if (!this.abort.signal.aborted) await this.recover(toError(error));
          continue;
        }
        refusals++;
        if (refusals === 1 || refusals % 50 === 0) {
          this.options.logger.debug?.(
            `${this.label}: waiting for the fence to name ${this.options.memberId} (owner ${error.currentOwner ?? '(none)'})`,
          );
        }
        const delay = backoffDelay(this.options.acquireBackoff, refusals);
        this.touch(delay);
        await sleep(delay, this.abort.signal);
      }
    }
    return false;
  }

  private async loop(): Promise<void> {
    let phase: Phase = 'claim';
    while (!this.abort.signal.aborted) {
      try {
        if (phase === 'group') {
          await this.call((c) => this.commands.acquire(c));
          phase = 'claim';
        }
        if (phase === 'claim') {
          this.setStatus('claiming');
          this.position = undefined;
          await this.claimPending();
          if (this.abort.signal.aborted) break;
          this.setStatus('reading');
          phase = 'read';
        }
        if (await this.readOnce()) phase = 'claim';
      } catch (error) {
        if (error instanceof FencedError) throw error;
        if (this.abort.signal.aborted) break;
        phase = error instanceof Error && error.message.startsWith('NOGROUP') ? 'group' : 'claim';
        await this.recover(toError(error));
      }
    }
  }

  /** Claim phase: every pending entry of the group on this shard, oldest first. */
  private async claimPending(): Promise<void> {
    let cursor = '0-0';
    do {
      if (this.acks.length > 0) await this.flushAcks();
      const reply = await this.call((c) => this.commands.claim(c, cursor, this.options.batchSize));
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

  /** One read turn. Resolves `true` when the claim phase must run again. */
  private async readOnce(): Promise<boolean> {
    const { batchSize } = this.options;
    const after = this.position;
    this.position = undefined;
    const reply = await this.call((c) =>
      after === undefined
        ? this.commands.ackAndRead(c, this.acks, batchSize)
        : this.commands.ackAndReadAfter(c, this.acks, batchSize, after),
    );
    this.acks = [];
    if (reply.kind === 'entries') {
      const last = reply.entries[reply.entries.length - 1] as RawStreamEntry;
      const position = last[0].toString('latin1');
      await this.handleBatch(reply.entries);
      this.position = position;
      return false;
    }
    if (reply.kind === 'empty') {
      await this.waitForEntries(reply.lastId);
      this.position = reply.lastId;
      return false;
    }
    this.options.logger.warn(
      `${this.label}: entries were delivered to ${this.options.memberId} but not seen (a reply lost on a broken connection, or entries deleted meanwhile); reclaiming them`,
    );
    return true;
  }

  private async handleBatch(entries: readonly RawStreamEntry[]): Promise<void> {
    for (let i = 0; i < entries.length; i++) {
      if (this.abort.signal.aborted) return;
      const entry = entries[i] as RawStreamEntry;
      const id = entry[0].toString('latin1');
      const outcome = await this.runner.run(id, entry[1], entry[2] ?? 1);
      if (outcome === 'ack') {
        this.acks.push(id);
        if (this.progressAt - this.lastCallAt >= this.options.maxAckDelayMs) await this.flushAcks();
      } else if (outcome === 'stop') return;
    }
  }

  /** Blocks until the stream has an entry after `lastId` (or `blockMs` passes). */
  private async waitForEntries(lastId: string): Promise<void> {
    const { blockMs, key, watchdogGraceMs } = this.options;
    try {
      await this.guarded(
        (c) => c.xread('COUNT', 1, 'BLOCK', blockMs, 'STREAMS', key, lastId),
        blockMs + watchdogGraceMs,
        this.abort.signal,
      );
    } catch (error) {
      if (error instanceof ReaderStoppedError) return;
      throw error;
    }
  }

  private async flushAcks(): Promise<void> {
    const acks = this.acks;
    await this.call((c) => this.commands.ack(c, acks));
    if (this.acks === acks) this.acks = [];
  }

  /** A short Redis call under the watchdog. */
  private call<T>(operation: (connection: RedisConnection) => Promise<T>): Promise<T> {
    return this.guarded(operation, this.options.watchdogGraceMs);
  }

  private async guarded<T>(
    operation: (connection: RedisConnection) => Promise<T>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<T> {
    this.touch(timeoutMs);
    try {
      const value = await this.connection.run(operation, timeoutMs, signal);
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
    const delay = backoffDelay(this.options.reconnectBackoff, this.consecutiveErrors);
    this.touch(delay);
    await sleep(delay, this.abort.signal);
  }

  private markLost(error: FencedError): void {
    this.lost = { code: 'FENCED', currentOwner: error.currentOwner, message: error.message };
    this.acks = [];
    this.currentStatus = 'lost';
    this.options.logger.warn(`${this.label}: shard lost: ${error.message}`);
  }

  /** Final acks (unless lost), close the connection, report. */
  private async finish(): Promise<void> {
    if (this.lost === undefined && this.acks.length > 0) {
      try {
        await this.flushAcks();
      } catch (error) {
        this.options.logger.warn(
          `${this.label}: could not acknowledge ${this.acks.length} handled entries on stop; they will be redelivered to the next owner: ${toError(error).message}`,
        );
      }
    }
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
