import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import {
  KeySpace,
  routingFunctionFor,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  activeShardIds,
  type StreamRecord,
} from '../../apps/coordinator/src/core/streams/stream-record.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { createTestRedis, useRedisPrefix } from '../support/redis.js';

/** A stream resharded from shards 0, 1 to 2…5, the old ones still draining: as lost with Redis. */
function resharded(stream: string): StreamRecord {
  const active = [2, 3, 4, 5];
  return {
    stream,
    version: 9,
    routingEpoch: 2,
    nextShardId: 6,
    shards: [
      { id: 0, state: 'draining', parents: [], createdAt: 1 },
      { id: 1, state: 'draining', parents: [], createdAt: 1 },
      ...active.map((id) => ({ id, state: 'active' as const, parents: [0, 1], createdAt: 2 })),
    ],
    routing: routingFunctionFor(active),
    resharding: null,
    createdAt: 1,
  };
}

/**
 * A stream Redis lost comes back with the shard ids and the slot ranges producers last wrote with
 * (docs/protocol.md §13.6): a producer still holding that routing puts every key on the shard a
 * refreshed producer puts it on, and one holding an older routing finds its shards gone
 * (STALE_ROUTING) instead of writing a key to a shard the new routing gives to other keys.
 */
describe('restoring a stream Redis lost', () => {
  const redis = useRedisPrefix('stream-restore');
  let raw: Redis;
  beforeAll(() => {
    raw = createTestRedis();
  });
  afterAll(async () => {
    await raw?.quit();
  });

  it('keeps the active shard ids and their routing, opens nothing else', async () => {
    const keys = new KeySpace(redis.prefix);
    const registry = new StreamRegistry(raw, keys);
    const lost = resharded('orders');
    const restored = await registry.restore(lost, Date.now());

    expect(activeShardIds(restored)).toEqual([2, 3, 4, 5]);
    expect(restored.routing).toEqual(lost.routing);
    expect(restored.routingEpoch).toBe(3);
    expect(restored.nextShardId).toBe(6);
    expect(restored.resharding).toBeNull();
    for (const id of [2, 3, 4, 5]) {
      const meta = shardMetaKey(keys.shardKey('orders', id));
      expect(await raw.hmget(meta, 'state', 'origin')).toEqual(['open', 'restored']);
    }
    for (const id of [0, 1]) {
      expect(await raw.hget(shardMetaKey(keys.shardKey('orders', id)), 'state')).toBeNull();
    }
  });

  it('changes nothing when the stream exists', async () => {
    const keys = new KeySpace(redis.prefix);
    const registry = new StreamRegistry(raw, keys);
    await registry.create('audit', 2, Date.now());
    const before = registry.get('audit');
    const restored = await registry.restore(resharded('audit'), Date.now());
    expect(restored).toEqual(before);
  });
});
