/**
 * `batch` option of a `@StreamShardHandler`: the handler receives the messages of one shard as
 * an array, in entry order.
 *
 * @publicApi
 */
export interface StreamShardBatchOptions {
  /** Most messages per handler call (integer ≥ 1, at most 10,000). */
  maxSize: number;
  /**
   * Longest time a batch waits for more messages after its first one arrived, when fewer than
   * `maxSize` are available (integer ms ≥ 0, at most 60,000). Default 0: hand over what one read
   * returned.
   */
  maxWaitMs?: number;
}

/** {@link StreamShardBatchOptions} with its default applied. */
export interface ResolvedStreamShardBatchOptions {
  readonly maxSize: number;
  readonly maxWaitMs: number;
}

/**
 * One failed message in a {@link StreamShardBatchResult}.
 *
 * @publicApi
 */
export interface StreamShardBatchItemFailure {
  /** The failed message's `id` (its stream entry id). */
  readonly itemIdentifier: string;
  /**
   * Why it failed (logged, passed to the `failed` hook, written to its dead-letter entry). A
   * `NonRetryableError` (or an instance of a `nonRetryable` class) dead-letters it at once.
   * Default: a `BatchItemFailedError`.
   */
  readonly error?: unknown;
}

/**
 * What a batch handler may return to report that some messages failed (the shape of an AWS SQS
 * partial batch response). Returning nothing — or an empty or missing `batchItemFailures` —
 * means every message was handled; throwing fails the whole batch.
 *
 * Order is kept: the first failed message that is to be retried, and every message after it,
 * are retried together, in order; only the messages before it are acknowledged (see the README,
 * "Batch handlers").
 *
 * @publicApi
 */
export interface StreamShardBatchResult {
  readonly batchItemFailures?: readonly StreamShardBatchItemFailure[] | null;
}
