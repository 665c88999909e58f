import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * Where a shard reader is in its life:
 * `idle` (constructed) → `starting` (waiting for the fence to name this member and for its read
 * gate, creating the consumer group) → `claiming` (taking over and handling earlier owners' pending entries) →
 * `reading` (new entries) → `stopping` → `stopped`; or → `lost` when the fence moved.
 * After a Redis error it goes back to `claiming` once Redis answers again.
 */
export type ShardReaderStatus =
  'idle' | 'starting' | 'claiming' | 'reading' | 'stopping' | 'stopped' | 'lost';

/**
 * Why a reader gave its shard up on its own: Redis refused a fenced command because the
 * shard's fence names another member (or none).
 */
export interface ShardLostReason {
  code: 'FENCED';
  /** The fence token found (`<version>:<memberId>`), or `null` when the field is missing. */
  currentOwner: string | null;
  message: string;
}

/**
 * Why a message went to the dead-letter stream: it failed `maxDeliveries` deliveries, it could
 * not be decoded, or its handler failed with a `NonRetryableError` (the last two at once,
 * without retries).
 */
export type DeadLetterReason = 'max-deliveries' | 'undecodable' | 'non-retryable';

/**
 * Metric hooks of one reader (bind labels such as stream and shard when creating it). Hooks
 * must be cheap and must not throw; an error thrown by a hook is ignored.
 */
export interface ShardReaderHooks {
  /** A handler call resolved after `durationMs`. */
  handled?(durationMs: number, message: StreamShardMessage): void;
  /**
   * A fenced ack of these entry ids succeeded (Redis answered): they are acknowledged. Called
   * once per successful ack call, with exactly the ids that call carried, as soon as its reply
   * arrives; `sentAt` is when it was sent (`performance.now()`). An id may be reported again
   * (after a lost reply, or by a later ack that carried it too, such as a stopping reader's
   * final one, whose reply can even come first): Redis applied it between its earliest report's
   * `sentAt` and that report.
   */
  acked?(ids: readonly string[], sentAt: number): void;
  /** A handler call threw `error`. */
  failed?(error: Error, message: StreamShardMessage): void;
  /** A failed message is about to be redelivered (after the backoff). */
  retried?(message: StreamShardMessage): void;
  /**
   * A message left the shard without being handled: written to the dead-letter stream
   * (`written`), or dropped because dead-lettering is off.
   */
  deadLettered?(
    reason: DeadLetterReason,
    entryId: string,
    deliveryCount: number,
    written: boolean,
  ): void;
  /** The shard was lost (fenced). */
  lost?(reason: ShardLostReason): void;
  /** A Redis call did not answer in time; the connection is being recreated. */
  watchdog?(): void;
  /** A Redis call failed (the reader keeps the shard and retries). */
  connectionError?(error: Error): void;
}

/**
 * Running totals of one reader.
 */
export interface ShardReaderCounters {
  /** Handler calls that resolved. */
  handled: number;
  /** Handler calls that threw. */
  failed: number;
  /** Redeliveries after a failure. */
  retried: number;
  /** Entries written to the dead-letter stream. */
  deadLettered: number;
  /** Entries dropped past `maxDeliveries` (or undecodable) with dead-lettering off. */
  dropped: number;
  /** Entries taken over from the pending list (claim phase). */
  claimed: number;
  /** Pending entries found deleted or trimmed before they could be handled. */
  missing: number;
  /** Redis calls abandoned by the watchdog. */
  watchdogFired: number;
  /** Redis calls that failed. */
  connectionErrors: number;
  /** Dedicated connections created (the first one included). */
  connectionsCreated: number;
}
