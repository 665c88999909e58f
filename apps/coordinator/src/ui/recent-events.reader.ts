import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

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
  return entries.reverse().map(([id, fields]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
    return {
      id,
      type: f.type ?? 'UNKNOWN',
      at: new Date(Number(f.at ?? 0)).toISOString(),
      groupEpoch: Number(f.groupEpoch ?? 0),
      data: JSON.parse(f.data ?? '{}') as Record<string, unknown>,
    };
  });
}
