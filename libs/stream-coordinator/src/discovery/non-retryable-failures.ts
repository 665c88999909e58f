import { NonRetryableError } from '../errors/non-retryable.error.js';
import type { ExceptionClass } from '../interfaces/stream-shard-handler-options.interface.js';
import type { BatchHandlerInvoke, HandlerInvoke } from './handler-invoker.factory.js';

/** How deep a `cause` chain is followed (chains can loop). */
const MAX_CAUSE_DEPTH = 8;

/**
 * Wraps a handler's `invoke` so a failure of one of the `nonRetryable` classes (the error itself
 * or an error in its `cause` chain) rejects as a {@link NonRetryableError}, which the runtime
 * dead-letters at once. Without classes, `invoke` is returned as is (no cost per message).
 * Keeps `invoke`'s shape: a synchronous throw stays synchronous.
 *
 * @internal
 */
export function withNonRetryable(
  invoke: HandlerInvoke,
  classes: readonly ExceptionClass[],
): HandlerInvoke {
  if (classes.length === 0) return invoke;
  const classify = (error: unknown): unknown =>
    isInstanceOfAny(error, classes) ? NonRetryableError.from(error) : error;
  return (message, context) => {
    let result: Promise<void> | undefined;
    try {
      result = invoke(message, context);
    } catch (error) {
      throw classify(error);
    }
    return result?.catch((error: unknown) => {
      throw classify(error);
    });
  };
}

/**
 * {@link withNonRetryable} for a batch handler: a whole-batch failure, and each `error` its
 * result reports in `batchItemFailures`, of one of the `nonRetryable` classes becomes a
 * {@link NonRetryableError} (those messages are dead-lettered at once).
 *
 * @internal
 */
export function withNonRetryableBatch(
  invoke: BatchHandlerInvoke,
  classes: readonly ExceptionClass[],
): BatchHandlerInvoke {
  if (classes.length === 0) return invoke;
  const classify = (error: unknown): unknown =>
    isInstanceOfAny(error, classes) ? NonRetryableError.from(error) : error;
  return async (messages, context) => {
    let result: unknown;
    try {
      result = await invoke(messages, context);
    } catch (error) {
      throw classify(error);
    }
    const failures = (result as { batchItemFailures?: unknown } | null | undefined)
      ?.batchItemFailures;
    if (!Array.isArray(failures)) return result;
    return {
      ...(result as object),
      batchItemFailures: failures.map((item: unknown) =>
        typeof item === 'object' && item !== null && 'error' in item
          ? { ...item, error: classify((item as { error: unknown }).error) }
          : item,
      ),
    };
  };
}

function isInstanceOfAny(error: unknown, classes: readonly ExceptionClass[]): boolean {
  let current = error;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && current instanceof Object; depth++) {
    for (const type of classes) if (current instanceof type) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
