import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Invalid `ShardReaderOptions`; the message names the option.
 */
export class ShardReaderOptionsError extends StreamCoordinatorError {
  override readonly name = 'ShardReaderOptionsError';
}
