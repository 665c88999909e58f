import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { useRedisPrefix } from '../../support/redis.js';
import { fill, grant, testShard, useReaders } from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

describe('ShardReader: concurrency across shards', () => {
  const { prefix, redis } = useRedisPrefix('concurrency');
  const newReader = useReaders();

  it('a shared limiter caps concurrent handlers across readers; each shard stays sequential', async () => {
    const limiter = new Semaphore(2);
    let running = 0;
    let peak = 0;
    const perShard = new Map<number, number>();
    let shardOverlap = false;
    let handled = 0;
    for (let shardId = 0; shardId < 4; shardId++) {
      const shard = testShard(prefix, 'jobs', shardId);
      await grant(redis(), shard, 'g', 'm');
      await fill(redis(), shard.key, 15);
      newReader({
        shard,
        group: 'g',
        memberId: 'm',
        limiter,
        handle: async (message) => {
          running++;
          peak = Math.max(peak, running);
          const inShard = (perShard.get(message.shard) ?? 0) + 1;
          perShard.set(message.shard, inShard);
          if (inShard > 1) shardOverlap = true;
          await new Promise((resolve) => setTimeout(resolve, 3));
          perShard.set(message.shard, inShard - 1);
          running--;
          handled++;
        },
      }).start();
    }
    await waitFor(() => handled === 60, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all handled',
    });
    expect(peak).toBe(2);
    expect(shardOverlap).toBe(false);
    expect(limiter.inUse).toBe(0);
  });

  it('without a limiter, shards run in parallel', async () => {
    let running = 0;
    let peak = 0;
    let handled = 0;
    for (let shardId = 10; shardId < 13; shardId++) {
      const shard = testShard(prefix, 'jobs', shardId);
      await grant(redis(), shard, 'g', 'm');
      await fill(redis(), shard.key, 10);
      newReader({
        shard,
        group: 'g',
        memberId: 'm',
        handle: async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running--;
          handled++;
        },
      }).start();
    }
    await waitFor(() => handled === 30, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all handled',
    });
    expect(peak).toBe(3);
  });
});
