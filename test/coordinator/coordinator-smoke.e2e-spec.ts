import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';

describe('coordinator process (smoke)', () => {
  const redis = useRedisPrefix('coord-smoke');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4' },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('joins two members and hands shards over revoke-first', async () => {
    const join = (memberId: string) =>
      api.post<HeartbeatResponse>('/v1/groups/g1/heartbeat', {
        memberId,
        memberEpoch: 0,
        rebalanceTimeoutMs: 10_000,
        subscribedStreams: ['orders'],
        ownedShards: [],
      });
    const a = await join('a');
    expect(a.status).toBe(200);
    expect(a.body.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
    const b = await join('b');
    expect(b.body.memberEpoch).toBe(2);
    expect(b.body.diff.awaitingRelease[0]?.shards.length).toBe(2);
    const revoke = await api.post<HeartbeatResponse>('/v1/groups/g1/heartbeat', {
      memberId: 'a',
      memberEpoch: 1,
    });
    const kept = revoke.body.assignment?.shards[0]?.shards ?? [];
    expect(kept.length).toBe(2);
    const ack = await api.post<HeartbeatResponse>('/v1/groups/g1/heartbeat', {
      memberId: 'a',
      memberEpoch: 1,
      ownedShards: [{ stream: 'orders', shards: kept }],
    });
    expect(ack.body.memberEpoch).toBe(2);
    const b2 = await api.post<HeartbeatResponse>('/v1/groups/g1/heartbeat', {
      memberId: 'b',
      memberEpoch: 2,
    });
    expect(b2.body.assignment?.shards[0]?.shards.length).toBe(2);
    const owners = await redis
      .redis()
      .hget(
        `${redis.prefix}:{orders:${b2.body.assignment?.shards[0]?.shards[0]}}:meta`,
        'owner:g1',
      );
    expect(owners?.endsWith(':b')).toBe(true);
  });

  it('refuses a member token on an admin route and no token at all', async () => {
    expect((await api.as('test-member-token').put('/v1/streams/x', { shards: 2 })).status).toBe(
      403,
    );
    expect((await api.as(null).get('/v1/groups')).status).toBe(401);
  });
});
