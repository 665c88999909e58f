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
}
