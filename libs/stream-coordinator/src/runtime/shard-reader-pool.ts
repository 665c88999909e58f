import { StreamShardContext } from '../context/stream-shard.context.js';
import type { ConcurrencyLimiter } from '../data-plane/concurrency-limiter.js';
import { Semaphore } from '../data-plane/concurrency-limiter.js';
import type { DataPlaneLogger } from '../interfaces/data-plane-logger.interface.js';
import { ShardReader } from '../data-plane/shard-reader.js';
import type { ShardReaderOptions } from '../data-plane/shard-reader.options.js';
import type { ShardLostReason, ShardReaderHooks } from '../data-plane/shard-reader.types.js';
import type { StreamHandlerDefinition } from '../discovery/stream-handler-definition.interface.js';
import { type ShardReleaseCause, ShardReleasedError } from '../errors/shard-released.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { KeySpace, prefixOfKey } from '../protocol/index.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';
import { type GrantedShard, shardId } from './membership.js';

/** What the pool needs to build readers. */
export interface ShardReaderPoolOptions {
  readonly group: string;
  readonly memberId: string;
  readonly handler: (stream: string) => StreamHandlerDefinition | undefined;
  readonly createConnection: () => ReaderRedis;
  readonly serializer: PayloadSerializer;
  readonly logger: DataPlaneLogger;
  /** Per-reader metric hooks (the runtime binds stream and shard labels). */
  readonly hooksFor?: (shard: GrantedShard) => ShardReaderHooks;
  /** A shard this member held was released (its reader settled after a revoke or a loss). */
  readonly onReleased: (shard: GrantedShard, cause: 'revoked' | 'lost' | 'dropped') => void;
  /**
   * Called before every handler call of every reader (see `ShardReaderOptions.beforeHandle`):
   * the runtime checks its lease there and self-fences, stopping the readers, once it ran out.
   */
  readonly beforeHandle?: (now: number) => void;
  /** Extra reader options (tests). */
  readonly readerOverrides?: Partial<ShardReaderOptions>;
}

interface Slot {
  readonly shard: GrantedShard;
  readonly reader: ShardReader;
  /** Resolves when the reader has fully stopped (handler settled, acks flushed, connection closed). */
  settled: Promise<void>;
  stopping: boolean;
  /** Aborts the handlers' `signal` (see `StreamShardContext.signal`) when the shard is given up. */
  readonly abort: AbortController;
  /** `performance.now()` from which a revoke of this shard counts (undefined: not revoked). */
  revokedAt: number | undefined;
}

/** Why the pool stops a reader: the handlers' abort reason follows from it. */
export type StopCause = 'revoked' | 'dropped' | 'shutdown';

/**
 * The readers of the shards this member owns: one {@link ShardReader} per shard, each on its own
 * connection, a shared concurrency limiter per stream. Reconciles towards the assignment it is
 * given: revoked shards are stopped (the in-flight handler settles first), new ones started —
 * never while an earlier reader of the same shard is still settling, so one process never runs
 * two readers of one shard. A shard counts as held from the moment its reader starts until that
 * reader settled; only then is it reported released.
 */
export class ShardReaderPool {
  private readonly slots = new Map<string, Slot>();
  private readonly limiters = new Map<string, ConcurrencyLimiter>();
  /** The assignment last given to {@link reconcile} (emptied by {@link stopAll}). */
  private target: ReadonlyMap<string, GrantedShard> = new Map();
  private closed = false;

  constructor(private readonly options: ShardReaderPoolOptions) {}

  /** Every shard still held: readers running or settling. */
  held(): GrantedShard[] {
    return [...this.slots.values()].map((s) => s.shard);
  }

  /** Readers currently in the pool (for health and metrics). */
  readers(): ReadonlyArray<{ shard: GrantedShard; reader: ShardReader; stopping: boolean }> {
    return [...this.slots.values()];
  }

  /**
   * Moves towards `assignment`: stops readers of shards not in it, starts readers for shards in
   * it that have none (waiting for a settling predecessor of the same shard first). `revokedAt`
   * (`performance.now()`, default now) is when a revoke in it counts from: the runtime passes the
   * time it sent the heartbeat that brought it, no later than the coordinator started its
   * rebalance timeout.
   */
  reconcile(assignment: ReadonlyMap<string, GrantedShard>, revokedAt = performance.now()): void {
    if (this.closed) return;
    this.target = assignment;
    for (const [id, slot] of this.slots) {
      if (!assignment.has(id) && !slot.stopping) {
        slot.revokedAt = revokedAt;
        this.stopSlot(id, slot, 'revoked');
      }
    }
    for (const [id, shard] of assignment) {
      const slot = this.slots.get(id);
      if (slot && !slot.stopping) continue;
      if (!this.options.handler(shard.stream)) continue;
      if (slot) {
        // Re-granted while still settling: start again once the old reader is gone, if the
        // shard is still granted then (only this shard: the others are not touched).
        void slot.settled.then(() => {
          const granted = this.target.get(id);
          if (granted !== undefined && !this.slots.has(id) && !this.closed) this.start(id, granted);
        });
        continue;
      }
      this.start(id, shard);
    }
  }

  /**
   * Stops every reader (shards dropped as lost, shutdown) and aborts the signal of every handler
   * still running, readers already stopping included. Resolves when all settled.
   */
  async stopAll(cause: StopCause = 'dropped'): Promise<void> {
    this.target = new Map();
    const settling: Array<Promise<void>> = [];
    for (const [id, slot] of this.slots) {
      if (!slot.stopping) this.stopSlot(id, slot, cause);
      else this.abortHandlers(slot, cause);
      settling.push(slot.settled);
    }
    await Promise.all(settling);
  }

  /** Stops everything and refuses new readers. */
  async close(): Promise<void> {
    this.closed = true;
    await this.stopAll('shutdown');
  }

  /**
   * The earliest time a shard still held was revoked (see {@link reconcile}), or `undefined`
   * when no revoked shard is still settling.
   */
  oldestRevoke(): number | undefined {
    let oldest: number | undefined;
    for (const slot of this.slots.values()) {
      if (slot.revokedAt !== undefined && (oldest === undefined || slot.revokedAt < oldest))
        oldest = slot.revokedAt;
    }
    return oldest;
  }

  private start(id: string, shard: GrantedShard): void {
    const definition = this.options.handler(shard.stream) as StreamHandlerDefinition;
    const prefix = prefixOfKey(shard.key);
    const deadLetterKey = prefix
      ? new KeySpace(prefix).deadLetterKey(shard.stream)
      : `${shard.key}:dlq`;
    const { group, memberId } = this.options;
    const abort = new AbortController();
    const signal = abort.signal;
    let slot: Slot | undefined;
    const reader = new ShardReader({
      createConnection: this.options.createConnection,
      group: this.options.group,
      memberId: this.options.memberId,
      stream: shard.stream,
      shard: shard.shard,
      key: shard.key,
      deadLetterKey,
      handle: (message) =>
        definition.invoke(message, new StreamShardContext(message, group, memberId, signal)),
      ...alreadyAppliedOption(definition, group, memberId),
      ...this.batchOptions(definition, group, memberId, signal),
      batchSize: Math.max(definition.options.batchSize, definition.options.batch?.maxSize ?? 0),
      blockMs: definition.options.blockMs,
      maxDeliveries: definition.options.maxDeliveries,
      retry: definition.options.retry,
      deadLetter: definition.options.deadLetter,
      ordering: definition.options.ordering,
      maxConcurrency: definition.options.maxConcurrency,
      maxBufferedEntries: definition.options.maxBufferedEntries,
      startFrom: definition.options.startFrom,
      serializer: this.options.serializer,
      limiter: this.limiterFor(definition),
      logger: this.options.logger,
      ...(this.options.hooksFor ? { hooks: this.options.hooksFor(shard) } : {}),
      ...(this.options.beforeHandle ? { beforeHandle: this.options.beforeHandle } : {}),
      onLost: (reason: ShardLostReason) => {
        this.options.logger.warn(
          `shard ${shard.stream}/${shard.shard} lost: ${reason.message} (owner now ${reason.currentOwner ?? 'nobody'})`,
        );
        if (slot && !slot.stopping) {
          slot.stopping = true;
          this.abortHandlers(slot, 'lost');
          this.finish(id, slot, 'lost');
        }
      },
      ...this.options.readerOverrides,
    });
    slot = {
      shard,
      reader,
      settled: Promise.resolve(),
      stopping: false,
      abort,
      revokedAt: undefined,
    };
    this.slots.set(id, slot);
    reader.start();
  }

  private stopSlot(id: string, slot: Slot, cause: StopCause): void {
    slot.stopping = true;
    const stopped = slot.reader.stop();
    this.abortHandlers(slot, cause);
    this.finish(id, slot, cause === 'shutdown' ? 'dropped' : cause, stopped);
  }

  /** Tells the shard's running handler to stop (its context's `signal`); the first cause wins. */
  private abortHandlers(slot: Slot, cause: StopCause | 'lost'): void {
    if (slot.abort.signal.aborted) return;
    const reason: ShardReleaseCause = cause === 'dropped' ? 'fenced' : cause;
    slot.abort.abort(new ShardReleasedError(slot.shard.stream, slot.shard.shard, reason));
  }

  private finish(
    id: string,
    slot: Slot,
    cause: 'revoked' | 'lost' | 'dropped',
    stopped?: Promise<void>,
  ): void {
    slot.settled = (stopped ?? slot.reader.stop())
      .catch((error: unknown) => {
        this.options.logger.warn(
          `stopping reader of ${slot.shard.stream}/${slot.shard.shard} failed: ${String(error)}`,
        );
      })
      .then(() => {
        if (this.slots.get(id) === slot) this.slots.delete(id);
        this.options.onReleased(slot.shard, cause);
      });
  }

  /**
   * A batch handler's reader options: its batches, and the call of its `invokeBatch` with a
   * context that describes the batch's first message (`signal`, group, member, stream and shard
   * hold for the whole batch).
   */
  private batchOptions(
    definition: StreamHandlerDefinition,
    group: string,
    memberId: string,
    signal: AbortSignal,
  ): Pick<ShardReaderOptions, 'batch' | 'handleBatch'> {
    const batch = definition.options.batch;
    const invokeBatch = definition.invokeBatch;
    if (batch === undefined || invokeBatch === undefined) return {};
    return {
      batch,
      handleBatch: (messages) =>
        invokeBatch(
          messages,
          new StreamShardContext(messages[0] as StreamShardMessage, group, memberId, signal),
        ),
    };
  }

  private limiterFor(definition: StreamHandlerDefinition): ConcurrencyLimiter {
    let limiter = this.limiters.get(definition.stream);
    if (!limiter) {
      limiter = new Semaphore(definition.options.concurrency);
      this.limiters.set(definition.stream, limiter);
    }
    return limiter;
  }
}

/** The id a pool uses for a shard (re-exported for the runtime). */
export { shardId };

/** The reader's `alreadyApplied` for an exactly-once handler's entries of `group`. */
function alreadyAppliedOption(
  definition: StreamHandlerDefinition,
  group: string,
  memberId: string,
): Pick<ShardReaderOptions, 'alreadyApplied'> {
  const check = definition.alreadyApplied;
  if (check === undefined) return {};
  return {
    alreadyApplied: (message, signal) =>
      check(
        { group, stream: message.stream, shard: message.shard, id: message.id, memberId },
        signal,
      ),
  };
}
