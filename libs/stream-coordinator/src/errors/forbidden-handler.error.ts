import { FORBIDDEN_HANDLER } from '../constants/stream-coordinator.messages.js';
import { NonRetryableError } from './non-retryable.error.js';

/**
 * A guard of a `@StreamShardHandler` returned `false`, so the handler did not run. The invocation
 * rejects with this error, a {@link NonRetryableError}: a guard's decision on a message does not
 * change on redelivery, so the message is dead-lettered at once (reason `non-retryable`) rather
 * than holding its shard's keys through every retry. A guard that may admit the message later
 * throws a retryable error instead of returning `false`. (Exception filters see Nest's own
 * `ForbiddenException` first, as for HTTP and microservice handlers; a filter that returns a
 * value handled it, and the message is acked.)
 */
export class ForbiddenHandlerError extends NonRetryableError {
  override name = 'ForbiddenHandlerError';

  constructor(
    /** The stream of the denied message. */
    readonly stream: string,
    /** `ClassName.method` of the handler. */
    readonly handler: string,
    /** Entry id of the denied message. */
    readonly messageId: string,
    options?: { cause?: unknown },
  ) {
    super(FORBIDDEN_HANDLER(stream, handler, messageId), options);
  }
}
