import { DUPLICATE_STREAM_HANDLER } from '../constants/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * Two `@StreamShardHandler` methods of one application handle the same stream. Thrown at
 * bootstrap; the message names both `ClassName.method`.
 */
export class DuplicateStreamHandlerError extends StreamCoordinatorError {
  override name = 'DuplicateStreamHandlerError';

  constructor(
    /** The stream handled twice. */
    readonly stream: string,
    /** `ClassName.method` of the handler registered first. */
    readonly firstHandler: string,
    /** `ClassName.method` of the handler that clashed with it. */
    readonly secondHandler: string,
  ) {
    super(DUPLICATE_STREAM_HANDLER(stream, firstHandler, secondHandler));
  }
}
