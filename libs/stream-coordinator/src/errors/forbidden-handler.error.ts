import { FORBIDDEN_HANDLER } from '../module/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * A guard of a `@StreamShardHandler` returned `false`, so the handler did not run. The invocation
 * rejects with this error and the runtime treats the message as failed: it is redelivered per the
 * retry policy and dead-lettered after `maxDeliveries`. (Exception filters see Nest's own
 * `ForbiddenException` first, as for HTTP and microservice handlers; a filter that handles it
 * without rethrowing makes the invocation resolve, and the message is acked.)
 *
 * @publicApi
 */
export class ForbiddenHandlerError extends StreamCoordinatorError {
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
