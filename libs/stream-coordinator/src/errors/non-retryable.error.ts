import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * A failure that retrying cannot fix (an invalid payload, a record that does not exist, a guard
 * that denies): a handler throws it (or an error it wraps) and the message is dead-lettered at
 * once with reason `non-retryable`, instead of being redelivered up to `maxDeliveries` times
 * with backoff while the keys behind it wait. Like BullMQ's `UnrecoverableError`. Errors of the
 * classes a handler lists in its `nonRetryable` option are treated the same way; the runtime
 * then records them as a `NonRetryableError` with the original's message and stack (and the
 * original as `cause`).
 *
 * @publicApi
 */
export class NonRetryableError extends StreamCoordinatorError {
  override name = 'NonRetryableError';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }

  /**
   * `error` as a `NonRetryableError`: itself when it is one, else one that keeps its message and
   * stack, with `error` as `cause`.
   */
  static from(error: unknown): NonRetryableError {
    if (error instanceof NonRetryableError) return error;
    const message =
      error instanceof Error ? error.message : typeof error === 'string' ? error : String(error);
    const wrapped = new NonRetryableError(message, { cause: error });
    if (error instanceof Error && error.stack !== undefined) wrapped.stack = error.stack;
    return wrapped;
  }
}
