import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A publish call was given something it cannot write (the message names the argument).
 */
export class PublishArgumentError extends StreamCoordinatorError {
  override readonly name = 'PublishArgumentError';
}
