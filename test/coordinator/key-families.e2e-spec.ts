import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
} from '@redis-stream-coordinator/nestjs/internal';
import {
  KeySpace,
  type ProtocolErrorBody,
  RoutingTable,
  shardMetaKey,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { TEST_TOKENS } from '../support/coordinator-process.js';
import { createTestRedis } from '../support/redis.js';
import { heartbeat, joinRequest, ok, useCoordinator } from './support/coordinator-fixture.js';

/**
 * Issue 14 item 7: a group's keys and a shard's keys must never be the same key. The stream is
 * named `g` and the group `0`: under the old layout both meta hashes were `<prefix>:{g:0}:meta`,
 * so deleting the group wiped `state=open` of the shard and every publish to it failed with
 * STALE_ROUTING from then on.
 */
describe('key families: a group and a shard never share a key', () => {
  const fx = useCoordinator('key-families');
  let connection: Redis;
  beforeAll(() => {
    connection = createTestRedis();
  });
  afterAll(() => connection.disconnect());

  it('deleting group "0" leaves shard 0 of stream "g" open, and publishes to it still land', async () => {
    const admin = fx.admin();
    const api = fx.member();
    const created = await admin.put<StreamRouting>('/v1/streams/g', { shards: 2 });
    expect(created.status).toBe(201);
    const shard0 = created.body.shards.find((s) => s.id === 0)?.key ?? '';
    expect(shard0).toBe(new KeySpace(fx.prefix).shardKey('g', 0));

    // Group "0" consumes stream g for a while, then leaves and is deleted.
    await ok(api, '0', joinRequest('m0', ['g']));
    await heartbeat(api, '0', { memberId: 'm0', memberEpoch: -1 });
    const del = await admin.delete<ProtocolErrorBody>('/v1/groups/0');
    expect(del.status, JSON.stringify(del.body)).toBe(204);

    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(
        new CoordinatorClient({
          baseUrl: fx.coordinator().url,
          token: TEST_TOKENS.member,
          requestTimeoutMs: 5000,
        }),
      ),
      maxAttempts: 2,
      retryDelayMs: 1,
    });
    const table = new RoutingTable(created.body.routing);
    let key = 'k0';
    for (let i = 1; table.shardFor(key) !== 0; i++) key = `k${i}`;
    const id = await publisher.publish('g', key, { seq: 0 });
    const stored = await fx.redis().xrange(shard0, '-', '+');
    expect(stored.map(([entryId]) => entryId)).toEqual([id]);
    expect(await fx.redis().hget(shardMetaKey(shard0), 'state')).toBe('open');

    // The group's own keys are gone and a new group "0" starts afresh.
    expect((await api.get<ProtocolErrorBody>('/v1/groups/0')).status).toBe(404);
    expect((await ok(api, '0', joinRequest('m1', ['g']))).memberEpoch).toBe(1);
  });
});
