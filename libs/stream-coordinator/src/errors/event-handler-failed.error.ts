import { StreamCoordinatorError } from './stream-coordinator.error.js';

/** What Nest's default RPC exception filter leaves of an error it does not know. */
const UNKNOWN_EXCEPTION_MESSAGE = 'Internal server error';

/**
 * An `@EventPattern` handler of `StreamCoordinatorTransport` failed, and Nest's RPC exception
 * layer handed back an error payload (`{ status: 'error', message }`) instead of an `Error`: an
 * `RpcException`'s error, or — for any other error, which Nest then logged — `Internal server
 * error`. The message is the payload's message; `cause` is the payload itself.
 */
export class EventHandlerFailedError extends StreamCoordinatorError {
  override name = 'EventHandlerFailedError';

  constructor(
    /** What the exception layer handed back. */
    readonly payload: unknown,
  ) {
    super(EventHandlerFailedError.describe(payload), { cause: payload });
  }

  private static describe(payload: unknown): string {
    const message = (payload as { message?: unknown } | null)?.message;
    const text =
      typeof message === 'string' ? message : (JSON.stringify(message ?? payload) ?? 'unknown');
    return text === UNKNOWN_EXCEPTION_MESSAGE
      ? `${text} (Nest's RPC exception filter replaced the handler's error and logged it; to keep ` +
          'the error itself, bind an exception filter that returns throwError(() => exception))'
      : text;
  }
}
