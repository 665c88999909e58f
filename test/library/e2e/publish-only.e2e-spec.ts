import type {
  DescribedGroup,
  GroupListing,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { startMemberApp } from './member-app.js';

// Suite 4: an app with the module and no handler only produces: it never joins its group, and
// StreamProducer.publish writes routed entries.
describe('e2e: publish-only app', () => {
  const redis = useRedisPrefix('e2e-publish-only');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '500', SESSION_TIMEOUT_MS: '3000' },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('never joins the group and publishes to the shard the key routes to', async () => {
    const producerApp = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group: 'billing',
    });
    try {
      expect(producerApp.runtime.isMember).toBe(false);
      const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
      const ids: Array<{ key: string; id: string }> = [];
      for (let i = 0; i < 20; i++) {
        const key = `customer-${i}`;
        ids.push({
          key,
          id: await producerApp.producer.publish(
            'orders',
            key,
            { seq: i },
            { headers: { source: 'e2e' } },
          ),
        });
      }
      const batch = await producerApp.producer.publishBatch('orders', [
        { key: 'customer-0', payload: { seq: 100 } },
        { key: 'customer-0', payload: { seq: 101 } },
      ]);
      expect(batch).toHaveLength(2);

      // every entry is on a shard of the routing metadata, each key always on the same shard
      const shardOfKey = new Map<string, string>();
      let found = 0;
      for (const shard of routing.shards) {
        for (const [id, fields] of await redis.redis().xrange(shard.key, '-', '+')) {
          const f = Object.fromEntries(
            fields.reduce<string[][]>(
              (acc, v, i) => (i % 2 ? acc : [...acc, [v, fields[i + 1] as string]]),
              [],
            ),
          );
          expect(shardOfKey.get(f.key as string) ?? shard.key).toBe(shard.key);
          shardOfKey.set(f.key as string, shard.key);
          if (ids.some((x) => x.id === id && x.key === f.key)) {
            found++;
            expect(JSON.parse(f.payload as string)).toEqual({
              seq: Number((f.key as string).split('-')[1]),
            });
            expect(JSON.parse(f.headers as string)).toEqual({ source: 'e2e' });
          }
        }
      }
      expect(found).toBe(20);
      expect(new Set(shardOfKey.values()).size).toBeGreaterThan(1);

      // the coordinator never saw a member: no group was even created, and no member id was asked for
      await new Promise((r) => setTimeout(r, 1200)); // > 2 heartbeat intervals: a member would have joined
      const group = await api.get<DescribedGroup>('/v1/groups/billing');
      expect(group.status === 404 || group.body.members.length === 0).toBe(true);
      const groups = (await api.get<{ groups: GroupListing[] }>('/v1/groups')).body.groups;
      expect(groups.filter((g) => g.groupId === 'billing' && g.members > 0)).toEqual([]);
      expect(producerApp.runtime.status().phase).toBe('idle');
    } finally {
      await producerApp.app.close();
    }
    expect(producerApp.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
