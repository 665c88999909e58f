import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

/**
 * Fast hand-off (beyond Kafka): tells members to heartbeat now instead of at their next interval,
 * by publishing their ids on the group's channel (`<prefix>:nudge:<group>`, one id per line).
 * Members subscribe to it. Used when a member has shards to revoke or shards became free for it.
 */
export class NudgePublisher {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
  ) {}

  /** Publishes a nudge for `memberIds` (no-op when empty). Best effort: errors are swallowed. */
  async nudge(groupId: string, memberIds: Iterable<string>): Promise<void> {
    const ids = [...new Set(memberIds)];
    if (ids.length === 0) return;
    try {
      await this.redis.publish(this.keys.nudgeChannel(groupId), ids.join('\n'));
    } catch {
      // A lost nudge only delays the member until its next regular heartbeat.
    }
  }
}
