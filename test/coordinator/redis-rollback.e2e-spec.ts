import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  KeySpace,
  ownerField,
  shardGateKey,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../support/restartable-redis.js';
import { uniquePrefix, createTestRedis } from '../support/redis.js';
import { heartbeat } from './support/coordinator-fixture.js';
import { settle, TestMember } from './support/test-member.js';
import { waitForNoProblems } from '../support/wait.js';

const GROUP = 'rollback-g';
const SHARDS = 2;

/**
 * A Redis that loses acknowledged writes (restarted from an older snapshot, as after a failover
 * or an AOF `everysec` crash) under two coordinator replicas: replica A served a change Redis then
 * lost; replica B serves the same requests again from the rolled-back state, reaching the very
 * same version number with another member holding the shard. A must not take its copy of the lost
 * change for the current one — no member it alone knows of is served, and no fence write of the
 * lost change is accepted: every shard's fence names exactly the owner Redis' group state records.
 */
describe('Redis loses its last writes under two replicas', () => {
  const prefix = uniquePrefix('rollback');
  const keys = new KeySpace(prefix);
  let server: RestartableRedis;
  let redis: Redis;
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;

  beforeAll(async () => {
    // Snapshots only (no AOF): what survives a crash is exactly the last SAVE.
    server = await startRestartableRedis({ args: ['--appendonly', 'no'] });
    redis = createTestRedis({ url: server.url, maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // refused while the server restarts; commands wait
    const options = {
      prefix,
      redisUrl: server.url,
      env: {
        STREAMS: `orders:${SHARDS}`,
        HEARTBEAT_INTERVAL_MS: '500',
        SESSION_TIMEOUT_MS: '60000',
      },
    };
    [a, b] = await Promise.all([
      CoordinatorProcess.start(options),
      CoordinatorProcess.start(options),
    ]);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    redis?.disconnect();
    await server?.dispose();
  });

  const version = async (): Promise<number> =>
    Number((await redis.hget(keys.groupMetaKey(GROUP), 'version')) ?? 0);

  /** Each shard's fence owner against the owner Redis' committed group state records. */
  const fenceProblems = async (): Promise<string[]> => {
    const committed = new Map<number, string>();
    for (const json of Object.values(await redis.hgetall(keys.groupMembersKey(GROUP)))) {
      const m = JSON.parse(json) as {
        id: string;
        a: Record<string, number[]>;
        pr: Record<string, number[]>;
      };
      for (const s of [...(m.a.orders ?? []), ...(m.pr.orders ?? [])]) committed.set(s, m.id);
    }
    const problems: string[] = [];
    for (let s = 0; s < SHARDS; s++) {
      const token = await redis.hget(shardMetaKey(keys.shardKey('orders', s)), ownerField(GROUP));
      const fenced = token?.slice(token.indexOf(':') + 1) ?? null;
      if (fenced !== (committed.get(s) ?? null)) {
        problems.push(`shard ${s}: fence names ${fenced}, the group state ${committed.get(s)}`);
      }
    }
    return problems;
  };

  it('a replica never serves or fences from a change Redis lost, even at an equal version', async () => {
    const apiA = new CoordinatorApi(a.url, TEST_TOKENS.member);
    const apiB = new CoordinatorApi(b.url, TEST_TOKENS.member);
    const m1 = new TestMember(apiA, GROUP, 'm1', ['orders']);
    await m1.join();
    await settle(apiA, GROUP, [m1]);
    expect(m1.shards('orders')).toEqual([0, 1]);

    // The snapshot Redis will come back from.
    await redis.save();
    const saved = { epoch: m1.epoch, owned: m1.owned, version: await version() };

    // Acknowledged by Redis, served by A, then lost: m2 joins and takes a shard from m1.
    const m2 = new TestMember(apiA, GROUP, 'm2', ['orders']);
    await m2.join();
    await settle(apiA, GROUP, [m1, m2]);
    const taken = m2.shards('orders');
    expect(taken).toHaveLength(1);
    const lostVersion = await version();
    expect(lostVersion).toBeGreaterThan(saved.version);

    await server.kill();
    await server.restart();
    expect(await version()).toBe(saved.version);

    // B serves the same requests again from the rolled-back state, for another member: the
    // group reaches A's version number with m3 holding the shard m2 held.
    await waitForNoProblems(
      async () => ((await apiB.get(`/v1/groups/${GROUP}`)).status === 200 ? [] : ['not yet']),
      { timeoutMs: 15_000, message: 'replica B to serve again', retryErrors: true },
    );
    const m1b = new TestMember(apiB, GROUP, 'm1', ['orders']);
    m1b.epoch = saved.epoch;
    m1b.owned = saved.owned;
    const m3 = new TestMember(apiB, GROUP, 'm3', ['orders']);
    await m3.join();
    await settle(apiB, GROUP, [m1b, m3]);
    expect(m3.shards('orders')).toEqual(taken);
    expect(await version()).toBe(lostVersion);
    expect(await fenceProblems()).toEqual([]);

    // m2, known only to the lost change, sends A a full heartbeat claiming its shard.
    const res = await heartbeat(apiA, GROUP, {
      memberId: 'm2',
      memberEpoch: m2.epoch,
      rebalanceTimeoutMs: 30_000,
      subscribedStreams: ['orders'],
      ownedShards: m2.owned,
    });
    expect(await fenceProblems()).toEqual([]);
    expect(res.status).not.toBe(200);
    expect(JSON.stringify(res.body)).toContain('UNKNOWN_MEMBER_ID');
    const gate = shardGateKey(keys.shardKey('orders', taken[0] as number), GROUP, 'm2');
    expect(await redis.exists(gate)).toBe(0);
    // A serves the surviving state.
    const m3a = await heartbeat(apiA, GROUP, { memberId: 'm3', memberEpoch: m3.epoch });
    expect(m3a.status).toBe(200);
  });
});
