import type { ResolvedStreamShardHandlerOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { AppliedEntryRef } from '../interfaces/exactly-once-applied-check.interface.js';
import type { BatchHandlerInvoke, HandlerInvoke } from './handler-invoker.factory.js';

/**
 * One registered `@StreamShardHandler`: what the member runtime looks up per stream.
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
  /**
   * For a batch handler (`options.batch`): handles one shard's messages in one call, resolving
   * to the handler's result (see `StreamShardBatchResult`); rejects when the whole batch failed.
   */
  readonly invokeBatch?: BatchHandlerInvoke;
  /**
   * For an exactly-once handler (with `PostgresExactlyOnceModule`): whether an entry's effects are
   * already committed; when not, the entry is recorded as dead-lettered in the offsets table
   * before this resolves `false`. Asked before its entry is dead-lettered (see
   * `ShardReaderOptions`); gives up
   * (rejects) when `signal` fires.
   */
  readonly alreadyApplied?: (entry: AppliedEntryRef, signal?: AbortSignal) => Promise<boolean>;
  /** Class that hosts the handler (for logs and metrics). */
  readonly className: string;
  /** The handler method. */
  readonly methodName: string;
}
