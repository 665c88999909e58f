import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The reader's connection closed while a call on it was in flight: its reply can never arrive
 * (reader connections do not resend unanswered commands after a reconnect), so the call ends at
 * once instead of at its deadline. The reader backs off and retries once ioredis has reconnected.
 */
export class ReaderConnectionClosedError extends StreamCoordinatorError {
  override readonly name = 'ReaderConnectionClosedError';

  constructor() {
    super(
      "the reader's Redis connection closed before the call was answered; retrying once it has reconnected",
    );
  }
}
