import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/** A Redis call was abandoned because the reader is stopping. */
export class ReaderStoppedError extends StreamCoordinatorError {
  override readonly name = 'ReaderStoppedError';

  constructor() {
    super('the shard reader is stopping');
  }
}
