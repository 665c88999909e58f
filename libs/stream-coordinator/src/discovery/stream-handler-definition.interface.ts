import type { ResolvedStreamShardHandlerOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { HandlerInvoke } from './handler-invoker.factory.js';

/**
 * One registered `@StreamShardHandler`: what the member runtime looks up per stream.
 *
 * @publicApi
 */
export interface StreamHandlerDefinition {
  /** The stream it handles. */
  readonly stream: string;
  /** Its options merged over `handlerDefaults` and the library defaults. */
  readonly options: ResolvedStreamShardHandlerOptions;
  /**
   * Handles one message through the handler's enhancers. Resolves: handled (ack). Rejects:
   * failed (retry, then dead-letter; a `NonRetryableError` — `ForbiddenHandlerError` when a guard
   * denied — dead-letters at once).
   */
  readonly invoke: HandlerInvoke;
  /** Class that hosts the handler (for logs and metrics). */
  readonly className: string;
  /** The handler method. */
  readonly methodName: string;
}
