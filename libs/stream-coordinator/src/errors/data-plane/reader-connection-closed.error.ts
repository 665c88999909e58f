import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The reader's connection closed while a call on it was in flight: its reply can never arrive
 * (reader connections do not resend unanswered commands after a reconnect), so the call ends at
 * once instead of at its deadline. The reader backs off and retries, on the same connection once
 * ioredis has reconnected it, or on a new direct connection. `cause`, when known, says why it
 * closed (a refused `AUTH`, a reset).
 */
export class ReaderConnectionClosedError extends StreamCoordinatorError {
  override readonly name = 'ReaderConnectionClosedError';

  constructor(cause?: Error) {
    super(
      `the reader's Redis connection closed before the call was answered${cause === undefined ? '' : ` (${cause.message})`}; retrying on a new or reconnected connection`,
      ...(cause === undefined ? [] : [{ cause }]),
    );
  }
}
