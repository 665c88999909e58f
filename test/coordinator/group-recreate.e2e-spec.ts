import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace, ownerField, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import { fenceOrderField } from '../../apps/coordinator/src/store/fence-writer.js';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { type MemberApp, startMemberApp } from '../library/e2e/member-app.js';
import { waitFor } from '../support/wait.js';

const SHARDS = 4;
const GROUP = 'recreated';

/**
 * A group deleted and created again across replicas: replica A looked the group up before it
 * existed; the group is created, used and deleted through replica B; then a member joins through
 * A. The new incarnation must be stamped so its fence writes win over everything the old one
 * wrote — the member owns its shards in the data plane, reads and handles every message.
 */
describe('a group deleted and re-created across replicas', () => {
  const redis = useRedisPrefix('recreate');
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  const apps: MemberApp[] = [];

  beforeAll(async () => {
    const options = {
      prefix: redis.prefix,
      env: {
        STREAMS: `orders:${SHARDS}`,
        HEARTBEAT_INTERVAL_MS: '300',
        SESSION_TIMEOUT_MS: '3000',
      },
    };
    [a, b] = await Promise.all([
      CoordinatorProcess.start(options),
      CoordinatorProcess.start(options),
    ]);
  });
  afterAll(async () => {
    for (const app of apps) await app.app.close().catch(() => undefined);
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const shardKeys = (): string[] =>
    Array.from({ length: SHARDS }, (_, i) => new KeySpace(redis.prefix).shardKey('orders', i));

  const publishAndAwait = async (app: MemberApp, from: number, count: number): Promise<void> => {
    for (let i = from; i < from + count; i++) {
      await app.producer.publish('orders', `k${i}`, { seq: i });
    }
    await waitFor(
      () => new Set(app.handled.map((h) => h.seq).filter((s) => s >= from)).size === count,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: `${app.runtime.status().memberId} to handle messages ${from}..${from + count - 1}`,
      },
    );
  };

  it('a member joining through the replica that saw the group missing owns, reads and handles', async () => {
    const apiA = new CoordinatorApi(a.url);
    const apiB = new CoordinatorApi(b.url);
    expect((await apiA.get(`/v1/groups/${GROUP}`)).status).toBe(404);

    // The first incarnation, through B: a member handles, leaves; the group is deleted.
    const first = await startMemberApp({
      coordinatorUrl: b.url,
      redis: redisUrl(),
      group: GROUP,
      memberId: 'first',
      handle: async () => undefined,
    });
    apps.push(first);
    await waitFor(() => first.runtime.status().held.length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the first member to hold every shard',
    });
    await publishAndAwait(first, 0, 20);
    await first.app.close();
    await waitFor(
      async () =>
        (await apiB.get<DescribedGroup>(`/v1/groups/${GROUP}`)).body.members?.length === 0,
      { timeoutMs: 10_000, intervalMs: 20, message: 'the first member to have left' },
    );
    expect((await apiB.delete(`/v1/groups/${GROUP}`)).status).toBe(204);

    // The second incarnation, through A.
    const second = await startMemberApp({
      coordinatorUrl: a.url,
      redis: redisUrl(),
      group: GROUP,
      memberId: 'second',
      handle: async () => undefined,
    });
    apps.push(second);
    await waitFor(() => second.runtime.status().held.length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the second member to hold every shard',
    });
    // The data-plane fence names the new member on every shard…
    await waitFor(
      async () => {
        const owners = await Promise.all(
          shardKeys().map((k) => redis.redis().hget(shardMetaKey(k), ownerField(GROUP))),
        );
        return owners.every((o) => o?.endsWith(':second') === true);
      },
      {
        timeoutMs: 10_000,
        intervalMs: 20,
        message: 'the fence of every shard to name the second member',
      },
    );
    // …and it reads and handles what is published to the new incarnation.
    await publishAndAwait(second, 100, 20);
    const described = (await apiA.get<DescribedGroup>(`/v1/groups/${GROUP}`)).body;
    expect(described.state).toBe('STABLE');
  });

  it('a new incarnation outranks an old one stamped by a Redis clock that ran ahead', async () => {
    const group = 'recreated-ahead';
    const apiB = new CoordinatorApi(b.url);
    const first = await startMemberApp({
      coordinatorUrl: b.url,
      redis: redisUrl(),
      group,
      memberId: 'first',
      handle: async () => undefined,
    });
    apps.push(first);
    await waitFor(() => first.runtime.status().held.length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the first member to hold every shard',
    });
    await first.app.close();
    await waitFor(
      async () =>
        (await apiB.get<DescribedGroup>(`/v1/groups/${group}`)).body.members?.length === 0,
      { timeoutMs: 10_000, intervalMs: 20, message: 'the first member to have left' },
    );
    // The first incarnation as a Redis whose clock ran an hour ahead stamped it (before a
    // failover to a host with the right clock): its incarnation and fence orders in the future.
    const ahead = Date.now() + 3_600_000;
    const meta = new KeySpace(redis.prefix).groupMetaKey(group);
    await redis.redis().hset(meta, 'createdAt', String(ahead));
    for (const key of shardKeys()) {
      const order = await redis.redis().hget(shardMetaKey(key), fenceOrderField(group));
      expect(order).not.toBeNull();
      const version = order!.split(':')[1];
      await redis.redis().hset(shardMetaKey(key), fenceOrderField(group), `${ahead}:${version}`);
    }
    expect((await apiB.delete(`/v1/groups/${group}`)).status).toBe(204);

    const second = await startMemberApp({
      coordinatorUrl: a.url,
      redis: redisUrl(),
      group,
      memberId: 'second',
      handle: async () => undefined,
    });
    apps.push(second);
    await waitFor(
      async () => {
        const owners = await Promise.all(
          shardKeys().map((k) => redis.redis().hget(shardMetaKey(k), ownerField(group))),
        );
        return owners.every((o) => o?.endsWith(':second') === true);
      },
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'the fence of every shard to name the second member',
      },
    );
    // The fences are written before the heartbeat that assigns the shards is answered: the
    // member holds them a moment after.
    await waitFor(() => second.runtime.status().held.length === SHARDS, {
      timeoutMs: 10_000,
      message: 'the second member to hold every shard',
    });
  });
});
