import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A batch handler reported a message as failed in `batchItemFailures` without an `error` of its
 * own: the failure logged, passed to the `failed` hook and written to the dead-letter entry.
 */
export class BatchItemFailedError extends StreamCoordinatorError {
  override readonly name = 'BatchItemFailedError';

  constructor(
    /** The stream entry id the handler reported. */
    readonly entryId: string,
  ) {
    super(`the batch handler reported entry ${entryId} as failed`);
  }
}
