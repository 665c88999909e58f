import { EMPTY_EVENT_RESULT } from '../constants/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * An `@EventPattern` handler of `StreamCoordinatorTransport` ended a message with an Observable
 * that completed without a value: its own, or an exception filter's that swallowed a failure
 * (`return EMPTY`). As with `ServerKafka` (whose `lastValueFrom` rejects on it), that is a
 * failure: the message is retried, then dead-lettered. Return or emit a value (`of(null)`) to
 * mark a message handled.
 */
export class EmptyEventResultError extends StreamCoordinatorError {
  override name = 'EmptyEventResultError';

  constructor(
    /** The stream (the `@EventPattern` pattern). */
    readonly stream: string,
    /** Entry id of the message. */
    readonly messageId: string,
  ) {
    super(EMPTY_EVENT_RESULT(stream, messageId));
  }
}
