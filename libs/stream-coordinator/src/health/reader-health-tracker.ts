import type { MemberRuntimeStatus } from '../runtime/member-runtime.js';
import type { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import { shardId } from '../runtime/membership.js';

/** A shard whose reader's Redis calls are failing. */
export interface ReaderFailure {
  readonly since: number;
  readonly lastAt: number;
  readonly message: string;
  readonly count: number;
}

/** A shard given up to the data-plane fence. */
export interface ShardLoss {
  readonly stream: string;
  readonly shard: number;
  readonly at: number;
  readonly owner: string | null;
}

/**
 * What the health checks need to remember between calls, collected from the runtime's events
 * (all times `performance.now()`): reader call failures per shard (watchdog timeouts and Redis
 * errors, cleared by a handled message or by quiet time, see the readers check), shards lost to
 * the fence, when the coordinator last fenced the member, and since when the held shards differ
 * from the assignment.
 *
 * @internal
 */
export class ReaderHealthTracker {
  private readonly failures = new Map<string, ReaderFailure>();
  private readonly losses = new Map<string, ShardLoss>();
  private fenced: { at: number; code: string | null } | null = null;
  private divergedSince: number | null = null;
  private readonly stops: Array<() => void> = [];

  constructor(
    events: MemberRuntimeEvents,
    private readonly status: () => MemberRuntimeStatus,
  ) {
    this.stops.push(
      events.onActivity(
        (a) => {
          const id = shardId(a.shard.stream, a.shard.shard);
          const now = performance.now();
          if (a.watchdog || a.connectionError) {
            const previous = this.failures.get(id);
            const message =
              a.connectionError?.message ??
              'a Redis call did not answer within the watchdog timeout';
            this.failures.set(id, {
              since: previous?.since ?? now,
              lastAt: now,
              message,
              count: (previous?.count ?? 0) + 1,
            });
          }
          if (a.lost) {
            this.losses.set(id, {
              stream: a.shard.stream,
              shard: a.shard.shard,
              at: now,
              owner: a.lost.currentOwner,
            });
          }
        },
        { handled: false, acked: false },
      ),
      // a handled message clears the shard's reader failure (checked cheaply: once per message)
      events.onHandled((shard) => {
        if (this.failures.size > 0) this.failures.delete(shardId(shard.stream, shard.shard));
      }),
      events.onLifecycle((type, data) => {
        if (type === 'fenced')
          this.fenced = { at: performance.now(), code: (data as { code: string | null }).code };
        if (
          type === 'assignment' ||
          type === 'released' ||
          type === 'fenced' ||
          type === 'self-fenced'
        )
          this.observe();
      }),
    );
  }

  /** Re-evaluates whether the held shards match the assignment (called by every check too). */
  observe(now: number = performance.now()): number | null {
    const s = this.status();
    const diverges = !sameShards(s.assigned, s.held);
    if (!diverges) this.divergedSince = null;
    else this.divergedSince ??= now;
    return this.divergedSince;
  }

  /** The failure state of a shard's reader, if any. */
  failure(stream: string, shard: number): ReaderFailure | undefined {
    return this.failures.get(shardId(stream, shard));
  }

  /** Forgets a shard's failures (its reader recovered). */
  clearFailure(stream: string, shard: number): void {
    this.failures.delete(shardId(stream, shard));
  }

  /** Shards lost since `since`. */
  lossesSince(since: number): ShardLoss[] {
    return [...this.losses.values()].filter((l) => l.at >= since);
  }

  /** The last time the coordinator fenced the member. */
  lastFenced(): { at: number; code: string | null } | null {
    return this.fenced;
  }

  /** Stops listening. */
  close(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}

function sameShards(
  a: ReadonlyArray<{ stream: string; shard: number }>,
  b: ReadonlyArray<{ stream: string; shard: number }>,
): boolean {
  if (a.length !== b.length) return false;
  const ids = new Set(a.map((s) => shardId(s.stream, s.shard)));
  return b.every((s) => ids.has(shardId(s.stream, s.shard)));
}
