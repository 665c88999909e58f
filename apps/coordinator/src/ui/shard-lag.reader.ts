import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { groupFigures } from '@redis-stream-coordinator/nestjs/metrics';

/** Lag and pending of one shard for one group (`null`: unknown). */
export interface ShardLag {
  readonly lag: number | null;
  readonly pending: number | null;
}

/**
 * `XINFO GROUPS` of each shard key, read in parallel: the group's `lag` (entries not yet
 * delivered) and `pending` (delivered, not acknowledged). A shard whose key or consumer group
 * does not exist yet, or whose read fails, gives `null`s.
 */
export async function readShardLag(
  redis: RedisConnection,
  group: string,
  keys: readonly string[],
): Promise<ShardLag[]> {
  return Promise.all(
    keys.map(async (key): Promise<ShardLag> => {
      try {
        const figures = groupFigures(await redis.xinfo('GROUPS', key), group);
        return figures
          ? { lag: figures.lag, pending: figures.pending }
          : { lag: null, pending: null };
      } catch {
        return { lag: null, pending: null };
      }
    }),
  );
}
