import { INVALID_STREAM_HANDLER } from '../constants/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * A `@StreamShardHandler` cannot be used: invalid stream name or options, applied to something
 * other than an instance method, hosted by a non-singleton provider that cannot be built per
 * message, or with a parameter the library cannot fill. The message names `ClassName.member`.
 */
export class InvalidStreamHandlerError extends StreamCoordinatorError {
  override name = 'InvalidStreamHandlerError';

  constructor(
    /** Class that declares the member. */
    readonly className: string,
    /** The decorated member (method or property name). */
    readonly memberName: string,
    /** What is wrong, without the `ClassName.member` prefix. */
    readonly reason: string,
  ) {
    super(INVALID_STREAM_HANDLER(className, memberName, reason));
  }
}
