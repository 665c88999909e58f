import type { StreamShardBatchOptions } from './stream-shard-batch.interface.js';

/**
 * Backoff between deliveries of a failing message.
 *
 * @publicApi
 */
export interface RetryBackoffOptions {
  /** Delay before the second delivery. Default 100 ms. */
  initialDelayMs?: number;
  /** Largest delay. Default 5000 ms. */
  maxDelayMs?: number;
  /** Factor applied after every failure. Default 2. */
  multiplier?: number;
}

/**
 * An exception class, as listed in `nonRetryable` (`BadRequestException`, a domain error class).
 *
 * @publicApi
 */
export type ExceptionClass = abstract new (...args: never[]) => unknown;

/**
 * Options of one `@StreamShardHandler`. Every field has a module-wide default
 * (`handlerDefaults` in the module options).
 *
 * @publicApi
 */
export interface StreamShardHandlerOptions {
  /** Most shards of this stream whose messages this member handles at the same time. Default 16. */
  concurrency?: number;
  /** Entries read from a shard per round trip. Default 100. */
  batchSize?: number;
  /** How long one blocking read waits for new entries. Default 2000 ms. */
  blockMs?: number;
  /**
   * Deliveries (first one and reclaims included) before a failing message is dead-lettered and
   * acked. Default 5.
   */
  maxDeliveries?: number;
  /** Backoff between deliveries of a failing message. */
  retry?: RetryBackoffOptions;
  /** Write messages past `maxDeliveries` to the stream's dead-letter stream. Default true. */
  deadLetter?: boolean;
  /**
   * Exception classes that retrying cannot fix (`[BadRequestException, ForbiddenException]`): a
   * failure that is an instance of one of them, or has one in its `cause` chain, dead-letters the
   * message at once (reason `non-retryable`) instead of being retried. A handler's list replaces
   * the `handlerDefaults` one. A `NonRetryableError` and a guard denial are never retried,
   * listed or not. Default none.
   */
  nonRetryable?: readonly ExceptionClass[];
  /**
   * How a shard's messages are ordered. `'shard'` (default): strictly one after another, in
   * entry order. `'key'`: messages with the same routing key keep entry order, messages with
   * different keys of the same shard are handled concurrently (up to `maxConcurrency` per shard);
   * a retried message holds back only its own key. Pick `'key'` when only the order per key
   * matters and handlers wait on I/O.
   */
  ordering?: 'shard' | 'key';
  /**
   * With `ordering: 'key'`: most messages of one shard handled at the same time (the stream's
   * `concurrency` still caps all of this member's handler calls of the stream). Default 16.
   */
  maxConcurrency?: number;
  /**
   * With `ordering: 'key'`: most entries of one shard held in memory (waiting for their key or
   * being handled); reading the shard pauses while it is reached. Default 200. Entries read
   * but not handed to the handler when the shard moves count a delivery at the next owner, so
   * keep it modest.
   */
  maxBufferedEntries?: number;
  /**
   * Batch handler: the method receives an array of one shard's messages, in entry order, up to
   * `maxSize` per call, waiting at most `maxWaitMs` for more after the first. It resolves (all
   * handled), returns a `StreamShardBatchResult` naming the failed ones, or throws (the whole
   * batch failed). Per handler only: refused in `handlerDefaults`. Default: off.
   */
  batch?: StreamShardBatchOptions;
  /**
   * Where this group starts reading a shard its Redis consumer group does not exist on yet (the
   * first member of the group to own the shard creates it): `'earliest'` from the shard's first
   * entry, `'latest'` from its next one (entries already there are skipped, as with Kafka's
   * `auto.offset.reset=latest`). Applies only while the consumer group is created: once it
   * exists the group resumes where it stopped, whatever this says. A shard created by a reshard
   * always starts from its first entry (the messages moved into it are not new). Default
   * `'earliest'`: a group created after the producers started would otherwise skip what they
   * already wrote.
   */
  startFrom?: StartFrom;
}

/**
 * Where a new consumer group starts reading a shard (see `StreamShardHandlerOptions.startFrom`).
 *
 * @publicApi
 */
export type StartFrom = 'earliest' | 'latest';
