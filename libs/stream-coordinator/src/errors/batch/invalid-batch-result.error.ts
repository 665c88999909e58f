import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A batch handler returned a result the runtime cannot read: `batchItemFailures` is not an
 * array, or one of its items has no `itemIdentifier` naming a message of the batch. The whole
 * batch then counts as failed (retried, then dead-lettered), as a whole-batch throw does — a
 * failure is never acked by accident.
 */
export class InvalidBatchResultError extends StreamCoordinatorError {
  override readonly name = 'InvalidBatchResultError';

  constructor(
    /** The stream of the batch. */
    readonly stream: string,
    /** What was wrong with the result. */
    readonly problem: string,
  ) {
    super(
      `the batch handler of stream "${stream}" returned an invalid result: ${problem}; return nothing (all handled) or { batchItemFailures: [{ itemIdentifier: message.id }] } naming messages of the batch`,
    );
  }
}
