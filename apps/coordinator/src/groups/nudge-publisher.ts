import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

/**
 * Fast hand-off (beyond Kafka): tells members to heartbeat now instead of at their next interval,
 * by publishing their ids on the group's channel (`<prefix>:nudge:<group>`, one id per line).
 * Members subscribe to it. Used when a member has shards to revoke or shards became free for it.
 */
export class NudgePublisher {
  /** Nudges waiting for their delay, per group: who, and the timer that sends them. */
  private readonly later = new Map<string, { ids: Set<string>; timer: NodeJS.Timeout }>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
  ) {}

  /**
   * Publishes a nudge for `memberIds` (no-op when empty), and forgets their delayed nudges (see
   * {@link nudgeSoon}). Best effort: errors are swallowed.
   */
  async nudge(groupId: string, memberIds: Iterable<string>): Promise<void> {
    const ids = [...new Set(memberIds)];
    if (ids.length === 0) return;
    const waiting = this.later.get(groupId);
    if (waiting !== undefined) for (const id of ids) waiting.ids.delete(id);
    await this.publish(groupId, ids);
  }

  /**
   * Nudges `memberIds` in `delayMs`, unless {@link nudge} reaches them first; calls for the same
   * group meanwhile join the same delayed nudge. For members that are waiting for shards several
   * others are still releasing: told at once when the last one is free, or after the delay with
   * what is free by then — one heartbeat round trip instead of one per release.
   */
  nudgeSoon(groupId: string, memberIds: Iterable<string>, delayMs: number): void {
    let waiting = this.later.get(groupId);
    if (waiting === undefined) {
      const ids = new Set<string>();
      const timer = setTimeout(() => {
        this.later.delete(groupId);
        if (ids.size > 0) void this.publish(groupId, [...ids]);
      }, delayMs);
      timer.unref();
      waiting = { ids, timer };
      this.later.set(groupId, waiting);
    }
    for (const id of memberIds) waiting.ids.add(id);
  }

  private async publish(groupId: string, ids: readonly string[]): Promise<void> {
    try {
      await this.redis.publish(this.keys.nudgeChannel(groupId), ids.join('\n'));
    } catch {
      // A lost nudge only delays the member until its next regular heartbeat.
    }
  }
}
