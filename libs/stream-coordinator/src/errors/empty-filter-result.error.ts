import { EMPTY_FILTER_RESULT } from '../constants/stream-coordinator.messages.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * An exception filter of a `@StreamShardHandler` caught a failure and returned an Observable that
 * completed without a value (`return EMPTY`). That does not handle the failure — as with
 * `ServerKafka`, whose `lastValueFrom` rejects on it — so the message is retried, then
 * dead-lettered, with this error. `cause` is the handler's own error when the method threw, and
 * its stack is kept. A filter marks a failure handled by returning a value (`of(null)`).
 */
export class EmptyFilterResultError extends StreamCoordinatorError {
  override name = 'EmptyFilterResultError';

  constructor(
    /** The stream of the message. */
    readonly stream: string,
    /** `ClassName.method` of the handler. */
    readonly handler: string,
    /** Entry id of the message. */
    readonly messageId: string,
    options?: { cause?: unknown },
  ) {
    super(EMPTY_FILTER_RESULT(stream, handler, messageId, describeCause(options)), options);
    const cause = options?.cause;
    if (cause instanceof Error && cause.stack !== undefined) this.stack = cause.stack;
  }
}

function describeCause(options: { cause?: unknown } | undefined): string | undefined {
  if (options === undefined || !('cause' in options)) return undefined;
  const { cause } = options;
  return cause instanceof Error ? cause.message : String(cause);
}
