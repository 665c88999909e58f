import { ShardReaderOptionsError } from '../errors/data-plane/shard-reader-options.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import type { RetryBackoffOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import type {
  ResolvedStreamShardBatchOptions,
  StreamShardBatchOptions,
} from '../interfaces/stream-shard-batch.interface.js';
import {
  OPTION_LIMITS,
  STREAM_SHARD_HANDLER_DEFAULTS as DEFAULTS,
} from '../constants/stream-coordinator.constants.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';
import type { RandomSource, ResolvedBackoff } from './backoff.js';
import type { ConcurrencyLimiter } from './concurrency-limiter.js';
import { SILENT_LOGGER, type DataPlaneLogger } from '../interfaces/data-plane-logger.interface.js';
import { JSON_PAYLOAD_SERIALIZER } from './json-payload.serializer.js';
import type { ShardLostReason, ShardReaderHooks } from './shard-reader.types.js';

/**
 * Options of one {@link ShardReader} (one owned shard of one stream for one group).
 */
export interface ShardReaderOptions {
  /**
   * Creates the reader's dedicated connection (called again when the connection must be
   * recreated). It must return a new connection every time, never a shared one; e.g.
   * `() => createReaderConnection(options)`.
   */
  createConnection: () => ReaderRedis;
  /** The coordinator group = the Redis consumer group on the shard. */
  group: string;
  /** This member's id = the Redis consumer name. */
  memberId: string;
  /** The logical stream (`orders`). */
  stream: string;
  /** The shard id. */
  shard: number;
  /** The shard's Redis key, as the coordinator handed it out. */
  key: string;
  /** The stream's dead-letter stream key (from the routing metadata). */
  deadLetterKey: string;
  /**
   * The handler. Resolve (or return `undefined`: done synchronously) → acknowledged; throw or
   * reject → retried, then dead-lettered.
   */
  handle: (message: StreamShardMessage) => Promise<void> | undefined;
  /**
   * Batch mode: messages go to {@link handleBatch} as arrays of up to `batch.maxSize`, in entry
   * order (see `BatchRunner`); `handle` is not called. Default: off.
   */
  batch?: StreamShardBatchOptions;
  /**
   * The batch handler (with `batch`): resolves to nothing (all handled) or to a
   * `StreamShardBatchResult` naming failed messages; rejects: the whole batch failed.
   */
  handleBatch?: (messages: readonly StreamShardMessage[]) => Promise<unknown>;
  /** Entries per read. Default 100. */
  batchSize?: number;
  /** How long one blocking read waits while the shard has nothing new. Default 2000 ms. */
  blockMs?: number;
  /** Deliveries before a failing message is dead-lettered (reclaims count). Default 5. */
  maxDeliveries?: number;
  /** Backoff between deliveries of a failing message. Default 100 ms ×2 up to 5 s. */
  retry?: RetryBackoffOptions;
  /** Write messages past `maxDeliveries` to the dead-letter stream (else drop them). Default true. */
  deadLetter?: boolean;
  /**
   * Where the group's consumer group starts on this shard when the reader creates it (it does
   * not exist yet): `earliest` (entry `0`) or `latest` (`$`). Default `earliest`.
   */
  startFrom?: 'earliest' | 'latest';
  /** Payload decoding. Default JSON. */
  serializer?: PayloadSerializer;
  /** Shared cap on concurrent handler calls across readers. Default: none. */
  limiter?: ConcurrencyLimiter;
  /** Metric hooks. */
  hooks?: ShardReaderHooks;
  /** Logger (Nest's `Logger` fits). Default: silent. */
  logger?: DataPlaneLogger;
  /**
   * Called once when the shard is lost (fenced), after the in-flight handler settled and the
   * connection closed. Not called on `stop()`.
   */
  onLost?: (reason: ShardLostReason) => void;
  /**
   * Called synchronously before every handler call (retries included). It may stop this reader
   * (`stop()`), for instance because the member's lease on its shards ran out (self-fencing after
   * an event-loop stall or a freeze): the message is then not handled and stays pending for the
   * shard's next owner. Must be cheap. `now` is the `performance.now()` of the reader's last
   * progress (the read that returned the batch, or the previous handler call ending): at most one
   * message's handling old, so the hook needs no clock reading of its own.
   */
  beforeHandle?: (now: number) => void;
  /**
   * For an exactly-once handler: whether the entry's effects are already committed (recorded in
   * the offsets table on an earlier delivery). Asked before the entry is dead-lettered for
   * `maxDeliveries` or a failure (not when undecodable): an applied entry is acknowledged instead.
   * `false` means the offsets table now records the entry as dead-lettered (no later attempt can
   * apply it), so the reader must dead-letter it. A rejection leaves the entry pending; the check
   * is tried again with backoff until it answers or the reader stops. `signal` is the reader's: the
   * check should give up (reject) when it fires, so a revoke or a shutdown is not held up by it.
   * Default: none (dead-letter as usual).
   */
  alreadyApplied?: (message: StreamShardMessage, signal?: AbortSignal) => Promise<boolean>;
  /**
   * Extra time a Redis call may take beyond its expected duration before the watchdog
   * abandons the connection and creates a new one: a blocking read gets `blockMs` + this, any
   * other call this alone. Default 3000 ms.
   */
  watchdogGraceMs?: number;
  /**
   * Longest time handled entries wait for their ack while a batch is being handled. When a
   * handler (or a run of them) takes longer, the acks so far are flushed at once through the
   * fenced `ack` script, which also tells a member whose shard moved meanwhile to stop before
   * it handles the rest of the batch. Fast batches are unaffected (their acks ride on the next
   * read). Default 1000 ms; 0 acks after every message.
   */
  maxAckDelayMs?: number;
  /** Backoff between attempts after a Redis error. Default 100 ms ×2 up to 5 s. */
  reconnectBackoff?: RetryBackoffOptions;
  /** Backoff while the fence does not name this member yet. Default 25 ms ×2 up to 1 s. */
  acquireBackoff?: RetryBackoffOptions;
  /**
   * `shard` (default): the shard's messages are handled strictly one after another, in entry
   * order. `key`: messages of one routing key keep entry order, different keys of the shard are
   * handled concurrently (up to {@link maxConcurrency}); see `KeyedDispatcher`.
   */
  ordering?: 'shard' | 'key';
  /** With `ordering: 'key'`: most handler calls in flight at once on this shard. Default 16. */
  maxConcurrency?: number;
  /**
   * With `ordering: 'key'`: most entries held (buffered plus in flight) on this shard; reads
   * pause while it is reached. Default 200.
   */
  maxBufferedEntries?: number;
  /**
   * Random source of the backoffs' full jitter (each delay is drawn from [0, its capped
   * exponential]). Default `Math.random`; tests inject their own.
   */
  random?: RandomSource;
}

/** {@link ShardReaderOptions} with every default applied. */
export interface ResolvedShardReaderOptions extends Required<
  Omit<
    ShardReaderOptions,
    | 'batch'
    | 'handleBatch'
    | 'limiter'
    | 'hooks'
    | 'onLost'
    | 'beforeHandle'
    | 'alreadyApplied'
    | 'retry'
    | 'reconnectBackoff'
    | 'acquireBackoff'
  >
> {
  batch: ResolvedStreamShardBatchOptions | undefined;
  handleBatch: ((messages: readonly StreamShardMessage[]) => Promise<unknown>) | undefined;
  limiter: ConcurrencyLimiter | undefined;
  hooks: ShardReaderHooks;
  onLost: ((reason: ShardLostReason) => void) | undefined;
  beforeHandle: ((now: number) => void) | undefined;
  alreadyApplied:
    ((message: StreamShardMessage, signal?: AbortSignal) => Promise<boolean>) | undefined;
  retry: ResolvedBackoff;
  reconnectBackoff: ResolvedBackoff;
  acquireBackoff: ResolvedBackoff;
}

/** Default `reconnectBackoff`. */
const RECONNECT_BACKOFF: ResolvedBackoff = { initialDelayMs: 100, maxDelayMs: 5000, multiplier: 2 };

/** Default `acquireBackoff`. */
const ACQUIRE_BACKOFF: ResolvedBackoff = { initialDelayMs: 25, maxDelayMs: 1000, multiplier: 2 };

/**
 * Applies defaults and validates.
 *
 * @throws ShardReaderOptionsError naming the first invalid option.
 */
export function resolveShardReaderOptions(options: ShardReaderOptions): ResolvedShardReaderOptions {
  if (typeof options.createConnection !== 'function')
    fail('createConnection', 'must be a function');
  if (typeof options.handle !== 'function') fail('handle', 'must be a function');
  for (const name of ['group', 'memberId', 'stream', 'key', 'deadLetterKey'] as const) {
    if (typeof options[name] !== 'string' || options[name] === '')
      fail(name, 'must be a non-empty string');
  }
  let batch: ResolvedStreamShardBatchOptions | undefined;
  if (options.batch !== undefined) {
    if (typeof options.handleBatch !== 'function')
      fail('handleBatch', 'must be a function when batch is set');
    batch = {
      maxSize: integer('batch.maxSize', options.batch.maxSize, 1, OPTION_LIMITS.batchMaxSize.max),
      maxWaitMs: integer(
        'batch.maxWaitMs',
        options.batch.maxWaitMs ?? 0,
        0,
        OPTION_LIMITS.batchMaxWaitMs.max,
      ),
    };
  }
  const resolved: ResolvedShardReaderOptions = {
    ...options,
    batch,
    handleBatch: options.handleBatch,
    shard: integer('shard', options.shard, 0),
    batchSize: integer(
      'batchSize',
      options.batchSize ?? DEFAULTS.batchSize,
      1,
      OPTION_LIMITS.batchSize.max,
    ),
    blockMs: integer('blockMs', options.blockMs ?? DEFAULTS.blockMs, 1),
    maxDeliveries: integer('maxDeliveries', options.maxDeliveries ?? DEFAULTS.maxDeliveries, 1),
    retry: backoff('retry', options.retry, DEFAULTS.retry),
    deadLetter: options.deadLetter ?? DEFAULTS.deadLetter,
    startFrom: options.startFrom ?? 'earliest',
    serializer: options.serializer ?? JSON_PAYLOAD_SERIALIZER,
    limiter: options.limiter,
    hooks: options.hooks ?? {},
    logger: options.logger ?? SILENT_LOGGER,
    onLost: options.onLost,
    beforeHandle: options.beforeHandle,
    alreadyApplied: options.alreadyApplied,
    maxAckDelayMs: integer('maxAckDelayMs', options.maxAckDelayMs ?? 1000, 0),
    watchdogGraceMs: integer('watchdogGraceMs', options.watchdogGraceMs ?? 3000, 1),
    reconnectBackoff: backoff('reconnectBackoff', options.reconnectBackoff, RECONNECT_BACKOFF),
    acquireBackoff: backoff('acquireBackoff', options.acquireBackoff, ACQUIRE_BACKOFF),
    random: options.random ?? Math.random,
    ordering: ordering(options.ordering),
    maxConcurrency: integer(
      'maxConcurrency',
      options.maxConcurrency ?? DEFAULTS.maxConcurrency,
      OPTION_LIMITS.maxConcurrency.min,
      OPTION_LIMITS.maxConcurrency.max,
    ),
    maxBufferedEntries: integer(
      'maxBufferedEntries',
      options.maxBufferedEntries ?? DEFAULTS.maxBufferedEntries,
      OPTION_LIMITS.maxBufferedEntries.min,
      OPTION_LIMITS.maxBufferedEntries.max,
    ),
  };
  return resolved;
}

function ordering(value: unknown): 'shard' | 'key' {
  if (value === undefined) return DEFAULTS.ordering;
  if (value !== 'shard' && value !== 'key') {
    const got = typeof value === 'string' ? JSON.stringify(value) : typeof value;
    fail('ordering', `must be "shard" or "key", got ${got}`);
  }
  return value;
}

function integer(name: string, value: unknown, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(name, `must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function backoff(
  name: string,
  value: RetryBackoffOptions | undefined,
  defaults: ResolvedBackoff,
): ResolvedBackoff {
  const out = { ...defaults, ...value };
  for (const key of ['initialDelayMs', 'maxDelayMs', 'multiplier'] as const) {
    if (typeof out[key] !== 'number' || !Number.isFinite(out[key]) || out[key] < 0) {
      fail(`${name}.${key}`, `must be a finite number ≥ 0, got ${String(out[key])}`);
    }
  }
  if (out.multiplier < 1) fail(`${name}.multiplier`, `must be ≥ 1, got ${out.multiplier}`);
  if (out.maxDelayMs < out.initialDelayMs) {
    fail(
      `${name}.maxDelayMs`,
      `must be ≥ initialDelayMs (${out.initialDelayMs}), got ${out.maxDelayMs}`,
    );
  }
  return out;
}

function fail(option: string, problem: string): never {
  throw new ShardReaderOptionsError(`ShardReader option "${option}" ${problem}`);
}
