import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A reader's direct connection closed (or was closed) before Redis answered a command: the reply
 * can never arrive. The reader opens a new connection for its next call; entries a lost
 * `XREADGROUP` reply carried stay pending and are claimed back in order.
 */
export class DirectConnectionClosedError extends StreamCoordinatorError {
  override readonly name = 'DirectConnectionClosedError';

  constructor(cause?: Error) {
    super(
      `the Redis connection closed before the command was answered${cause === undefined ? '' : ` (${cause.message})`}`,
      ...(cause === undefined ? [] : [{ cause }]),
    );
  }
}
