import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A handler declares `batch` together with something a batch handler cannot support (for
 * instance a `@ShardMessage('payload')` parameter, which picks a field of one message while a
 * batch handler receives an array). Thrown when the handler is declared or registered; nothing
 * is started.
 */
export class UnsupportedBatchHandlerError extends StreamCoordinatorError {
  override readonly name = 'UnsupportedBatchHandlerError';

  constructor(
    /** `ClassName.method` of the handler. */
    readonly handler: string,
    /** What cannot go with `batch`, and what to do instead. */
    readonly reason: string,
  ) {
    super(`${handler}: "batch" cannot be used here: ${reason}`);
  }
}
