import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';
import { uniquePrefix, createTestRedis } from '../support/redis.js';

interface HealthBody {
  status: string;
  details?: Record<string, { status: string; maxmemoryPolicy?: string; warning?: string }>;
}

/**
 * On a Redis Cluster every master is asked for its `maxmemory-policy`, from the start: one master
 * that evicts (here not the one holding the catalog) is warned about in the start log and in
 * `/health/ready`, which stays up.
 */
describe('eviction warning on a Redis Cluster', () => {
  let cluster: RedisClusterHandle | undefined;
  let coordinator: CoordinatorProcess | undefined;
  beforeAll(async () => {
    cluster = await startRedisCluster();
  });
  afterAll(async () => {
    await coordinator?.stop();
    await cluster?.stop();
  });

  it('names the policy of a master that evicts, at start and in readiness', async () => {
    if (!cluster) throw new Error('no cluster');
    const prefix = uniquePrefix('evict-cluster');
    const catalogOwner = await cluster.ownerOf(new KeySpace(prefix).streamsKey());
    const evicting = cluster.nodes.find((n) => n.port !== catalogOwner.port);
    if (!evicting) throw new Error('no second master');
    const admin = createTestRedis({ url: { host: evicting.host, port: evicting.port } });
    try {
      await admin.config('SET', 'maxmemory-policy', 'volatile-lru');
    } finally {
      admin.disconnect();
    }
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: cluster.url,
      env: { STREAMS: 'orders:2' },
    });
    expect(coordinator.output()).toMatch(/maxmemory-policy is volatile-lru/);
    // details are shown to authenticated callers only (docs/protocol.md §15.1)
    const ready = await new CoordinatorApi(coordinator.url).get<HealthBody>('/health/ready');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(ready.body.details?.redis).toMatchObject({
      status: 'up',
      maxmemoryPolicy: 'volatile-lru',
    });
  });
});
