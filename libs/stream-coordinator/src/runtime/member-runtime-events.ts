import { Injectable } from '@nestjs/common';
import type {
  DeadLetterReason,
  ShardLostReason,
  ShardReaderHooks,
} from '../data-plane/shard-reader.types.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import type { GrantedShard } from './membership.js';

/** Lifecycle events of the member runtime. */
export interface MemberLifecycleEvents {
  joining: { memberId: string };
  assignment: { assigned: GrantedShard[]; epoch: number };
  released: { shard: GrantedShard; cause: 'revoked' | 'lost' | 'dropped' };
  fenced: { code: string | null };
  'self-fenced': Record<string, never>;
  recovered: Record<string, never>;
  nudged: Record<string, never>;
  left: Record<string, never>;
}

/** Per-message events of the shard readers. */
export interface ShardActivity {
  readonly shard: GrantedShard;
  handled?: { durationMs: number; message: StreamShardMessage };
  /**
   * A fenced ack of these entries succeeded (one event per successful ack call, with the ids it
   * carried, when Redis answered; an id may come again in a later one); `sentAt` is when it was
   * sent (`performance.now()`).
   */
  acked?: { ids: readonly string[]; sentAt: number };
  failed?: { error: Error; message: StreamShardMessage };
  retried?: { message: StreamShardMessage };
  deadLettered?: {
    reason: DeadLetterReason;
    entryId: string;
    deliveryCount: number;
    written: boolean;
  };
  lost?: ShardLostReason;
  watchdog?: true;
  connectionError?: Error;
}

type LifecycleListener = <K extends keyof MemberLifecycleEvents>(
  type: K,
  data: MemberLifecycleEvents[K],
) => void;
type ActivityListener = (activity: ShardActivity) => void;

/**
 * Called once per message a handler finished without error, with the reader's shard (the same
 * object for every message of one reader, so listeners can key per-shard state on it), the
 * handler's duration and the message. Nothing is allocated for the call.
 */
export type HandledListener = (
  shard: GrantedShard,
  durationMs: number,
  message: StreamShardMessage,
) => void;

/**
 * What the member runtime does, for observers inside the application (metrics, health, tests).
 * One instance per application; listeners must be cheap and must not throw.
 */
@Injectable()
export class MemberRuntimeEvents {
  private readonly lifecycle = new Set<LifecycleListener>();
  private readonly activity = new Set<ActivityListener>();
  private readonly handled = new Set<HandledListener>();
  /** Activity listeners that want `handled` activities. */
  private handledActivity = 0;
  /** Activity listeners that want `acked` activities. */
  private ackedActivity = 0;

  /** Listens to lifecycle events; returns the function that stops listening. */
  onLifecycle(listener: LifecycleListener): () => void {
    this.lifecycle.add(listener);
    return () => this.lifecycle.delete(listener);
  }

  /**
   * Listens to per-message activity; returns the function that stops listening. With
   * `{ handled: false }` the listener is not called for handled messages (the per-message
   * event): listeners that only watch failures, retries and losses should say so, which spares
   * the runtime an activity object per message (use {@link onHandled} for handled messages).
   * Likewise `{ acked: false }` for the acknowledgements (one activity per acked batch).
   */
  onActivity(
    listener: ActivityListener,
    options: { readonly handled?: boolean; readonly acked?: boolean } = {},
  ): () => void {
    const wantsHandled = options.handled !== false;
    const wantsAcked = options.acked !== false;
    const entry: ActivityListener =
      wantsHandled && wantsAcked
        ? listener
        : (activity) => {
            if (!wantsHandled && activity.handled !== undefined) return;
            if (!wantsAcked && activity.acked !== undefined) return;
            listener(activity);
          };
    this.activity.add(entry);
    if (wantsHandled) this.handledActivity++;
    if (wantsAcked) this.ackedActivity++;
    return () => {
      if (!this.activity.delete(entry)) return;
      if (wantsHandled) this.handledActivity--;
      if (wantsAcked) this.ackedActivity--;
    };
  }

  /**
   * Listens to handled messages only, without an activity object per message (the per-message
   * path of metrics); returns the function that stops listening. `onActivity` listeners see the
   * same messages as `handled` activities.
   */
  onHandled(listener: HandledListener): () => void {
    this.handled.add(listener);
    return () => this.handled.delete(listener);
  }

  /** @internal */
  emit<K extends keyof MemberLifecycleEvents>(type: K, data: MemberLifecycleEvents[K]): void {
    for (const l of this.lifecycle) {
      try {
        l(type, data);
      } catch {
        // observers never break the runtime
      }
    }
  }

  /** Reader hooks that forward to the activity listeners. @internal */
  readerHooks(shard: GrantedShard): ShardReaderHooks {
    const send = (activity: ShardActivity): void => {
      for (const l of this.activity) {
        try {
          l(activity);
        } catch {
          // observers never break the runtime
        }
      }
    };
    return {
      handled: (durationMs, message) => {
        for (const l of this.handled) {
          try {
            l(shard, durationMs, message);
          } catch {
            // observers never break the runtime
          }
        }
        if (this.handledActivity > 0) send({ shard, handled: { durationMs, message } });
      },
      acked: (ids, sentAt) => {
        if (this.ackedActivity > 0) send({ shard, acked: { ids, sentAt } });
      },
      failed: (error, message) => send({ shard, failed: { error, message } }),
      retried: (message) => send({ shard, retried: { message } }),
      deadLettered: (reason, entryId, deliveryCount, written) =>
        send({ shard, deadLettered: { reason, entryId, deliveryCount, written } }),
      lost: (reason) => send({ shard, lost: reason }),
      watchdog: () => send({ shard, watchdog: true }),
      connectionError: (error) => send({ shard, connectionError: error }),
    };
  }
}
