import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A dead-letter operation was given something it cannot use: a bad stream name, entry id,
 * filter, limit, or a purge without confirmation (the message names it). Nothing was changed.
 */
export class DeadLetterArgumentError extends StreamCoordinatorError {
  override readonly name = 'DeadLetterArgumentError';
}
