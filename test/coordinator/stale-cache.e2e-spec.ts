import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { useRedisPrefix } from '../support/redis.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from './support/in-process-coordinator.js';

const join = (memberId: string): HeartbeatRequest => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs: 10_000,
  subscribedStreams: ['orders'],
  ownedShards: [],
});

/**
 * A replica's cache may be stale in any way another replica can make it: the compare-and-set must
 * catch every case, including a group deleted and created again (its version counter restarts, so
 * the stale cache's version can match the new incarnation's).
 */
describe('stale replica caches', () => {
  const redis = useRedisPrefix('stale-cache');
  let one: InProcessCoordinator;
  let two: InProcessCoordinator;

  beforeAll(async () => {
    one = await startInProcessCoordinator({ prefix: redis.prefix, streams: { orders: 4 } });
    two = await startInProcessCoordinator({ prefix: redis.prefix });
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });

  it('a group deleted and re-created meanwhile is not mistaken for the cached one (ABA)', async () => {
    const g = 'g-aba';
    const x = (await one.coordinator.heartbeat(g, join('x'), null)) as HeartbeatResponse;
    expect(x.memberEpoch).toBe(1); // replica one caches the group at version 1, with x
    await two.coordinator.heartbeat(g, { memberId: 'x', memberEpoch: -1 }, null);
    await two.coordinator.deleteGroup(g);
    const y = (await two.coordinator.heartbeat(g, join('y'), null)) as HeartbeatResponse;
    expect(y.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
    expect((await two.coordinator.read(g)).state.meta.version).toBe(1); // same version as one's cache

    // x (a zombie of the old incarnation) heartbeats to replica one: it must not be served from
    // the stale cache — it is not a member of this group.
    await expect(
      one.coordinator.heartbeat(g, { memberId: 'x', memberEpoch: 1 }, null),
    ).rejects.toMatchObject({
      code: 'UNKNOWN_MEMBER_ID',
    });
    const seen = (await one.coordinator.read(g)).state;
    expect([...seen.members.keys()]).toEqual(['y']);
    // A change computed on the stale cache must not be written over the new incarnation either.
    await one.coordinator.heartbeat(g, join('z'), null);
    const after = (await two.coordinator.read(g)).state;
    expect([...after.members.keys()].sort()).toEqual(['y', 'z']);
  });

  it('DELETE of a group that emptied on another replica is not refused from the stale cache', async () => {
    const g = 'g-del';
    await one.coordinator.heartbeat(g, join('x'), null);
    await two.coordinator.heartbeat(g, { memberId: 'x', memberEpoch: -1 }, null);
    await one.coordinator.deleteGroup(g); // one's cache still lists x
    expect((await two.coordinator.read(g)).exists).toBe(false);
    // …and one created meanwhile is not reported missing.
    expect((await one.coordinator.read(g)).exists).toBe(false); // one has seen "no such group"
    await two.coordinator.heartbeat(g, join('y'), null);
    await two.coordinator.heartbeat(g, { memberId: 'y', memberEpoch: -1 }, null);
    await one.coordinator.deleteGroup(g);
    expect((await two.coordinator.read(g)).exists).toBe(false);
  });

  it('keeps nothing for groups that do not exist (random lookups leave no trace)', async () => {
    const before = one.coordinator.cachedGroups().size;
    for (let i = 0; i < 200; i++) {
      expect((await one.coordinator.read(`g-random-${i}`)).exists).toBe(false);
    }
    await expect(one.coordinator.deleteGroup('g-random-x')).rejects.toMatchObject({
      code: 'GROUP_ID_NOT_FOUND',
    });
    expect(one.coordinator.cachedGroups().size).toBe(before);
  });

  it('a group read as missing on one replica and created through another is seen at once', async () => {
    const g = 'g-late';
    expect((await one.coordinator.read(g)).exists).toBe(false);
    const created = (await two.coordinator.heartbeat(g, join('x'), null)) as HeartbeatResponse;
    expect(created.memberEpoch).toBe(1);
    const seen = await one.coordinator.read(g);
    expect(seen.exists).toBe(true);
    // Its incarnation is the one Redis set in the creating commit, not a time one replica picked.
    const stored = await one.redis.hget(one.keys.groupMetaKey(g), 'createdAt');
    expect(String(seen.state.meta.createdAt)).toBe(stored);
    expect((await two.coordinator.read(g)).state.meta.createdAt).toBe(seen.state.meta.createdAt);
    // …and the creating commit's event records that same incarnation (projections rebuild from it).
    const changed = (await one.store.events(g, undefined, 10)).find(
      (e) => e.type === 'GROUP_STATE_CHANGED',
    );
    if (!changed) throw new Error('no GROUP_STATE_CHANGED event for the creating commit');
    expect((changed.data as { meta?: { createdAt?: number } }).meta?.createdAt).toBe(
      seen.state.meta.createdAt,
    );
  });
});
