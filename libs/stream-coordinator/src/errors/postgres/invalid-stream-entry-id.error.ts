import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A value given as a Redis Stream entry id is not one (`<ms>-<seq>`, two unsigned 64-bit
 * decimal integers). The exactly-once check compares entry ids as numbers and refuses anything
 * else rather than guess.
 *
 * @publicApi
 */
export class InvalidStreamEntryIdError extends StreamCoordinatorError {
  override name = 'InvalidStreamEntryIdError';

  constructor(readonly received: string) {
    super(
      `${JSON.stringify(received)} is not a Redis Stream entry id: expected <ms>-<seq>, two unsigned 64-bit decimal integers (as in 1700000000000-0)`,
    );
  }
}
