import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * `Semaphore.release()` was called when no permit was taken: a caller released twice, or without
 * a successful `acquire()`. Releasing it anyway would raise the concurrency above its limit.
 */
export class SemaphoreReleaseError extends StreamCoordinatorError {
  override readonly name = 'SemaphoreReleaseError';

  constructor() {
    super(
      'Semaphore.release() without a matching acquire: call release() exactly once for each acquire() that resolved',
    );
  }
}
