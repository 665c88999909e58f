import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A Redis call of a shard reader did not answer within its deadline (the connection is
 * presumed hung, e.g. after a network blip, and is replaced).
 */
export class ReaderWatchdogError extends StreamCoordinatorError {
  override readonly name = 'ReaderWatchdogError';

  constructor(readonly timeoutMs: number) {
    super(`Redis did not answer within ${timeoutMs} ms; recreating the reader's connection`);
  }
}
