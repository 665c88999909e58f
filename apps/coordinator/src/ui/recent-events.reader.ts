import type { GroupEventEntry, KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { groupEventEntry } from '../store/event-entry.codec.js';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';

/**
 * The newest `count` entries of a group's event log, oldest first (`XREVRANGE`, so reading the
 * tail of a long log costs the same as a short one).
 */
export async function recentEvents(
  redis: RedisConnection,
  keys: KeySpace,
  groupId: string,
  count: number,
): Promise<GroupEventEntry[]> {
  const entries = await redis.xrevrange(keys.groupEventsKey(groupId), '+', '-', 'COUNT', count);
  return entries.reverse().map(([id, fields]) => groupEventEntry(id, fields));
}
