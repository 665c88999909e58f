import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribedGroup, HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { connectRedis } from '../support/redis-client.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import {
  buildRedisClockShim,
  type RedisClockShim,
} from '../support/redis-clock/redis-clock-shim.js';
import { uniquePrefix } from '../support/redis.js';
import { pause, waitForNoProblems } from '../support/wait.js';

const SESSION_TIMEOUT_MS = 3000;
/** How far the first master's clock runs ahead of the others'. */
const SKEW_MS = 5000;
/** The session timers scan 32 groups per round trip. */
const SCAN_BATCH = 32;

/**
 * Redis Cluster masters whose clocks disagree (docs/protocol.md §4.6): each group is timed on its
 * own master's clock, and the session timers compare a group only with its own earlier scans. The
 * groups are chosen so that the timers' first batch of scans holds one group on the master whose
 * clock is ahead and their second batch none: comparing batches with each other (as the timers
 * once did) sees a step back and a jump ahead every round, and no member ever expires. And the
 * start of a revocation is stamped on its group's clock, not on the last master a replica heard
 * from: else a rebalance timeout on the master ahead ran out the skew too early.
 */
describe('Redis Cluster masters with clocks apart', () => {
  const prefix = uniquePrefix('skew');
  const keys = new KeySpace(prefix);
  let shim: RedisClockShim;
  let cluster: RedisClusterHandle;
  let ahead: Redis;
  let behind: Redis;
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    shim = await buildRedisClockShim();
    shim.setOffset(SKEW_MS);
    cluster = await startRedisCluster({ nodeEnv: (i) => (i === 0 ? shim.env : {}) });
    ahead = connectRedis(cluster.nodes[0] as { host: string; port: number });
    behind = connectRedis(cluster.nodes[1] as { host: string; port: number });
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: cluster.url,
      env: {
        STREAMS: 'orders:4',
        HEARTBEAT_INTERVAL_MS: '300',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    });
    api = new CoordinatorApi(coordinator.url);
  }, 60_000);
  afterAll(async () => {
    await coordinator?.stop();
    ahead?.disconnect();
    behind?.disconnect();
    await cluster?.stop();
    shim?.remove();
  });

  const redisTime = async (node: Redis): Promise<number> => {
    const [seconds, micros] = await node.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  /** One group on the master ahead, sorted first, then `SCAN_BATCH + 7` groups on the others. */
  const pickGroups = async (): Promise<string[]> => {
    const aheadPort = cluster.nodes[0]?.port;
    const onAhead: string[] = [];
    const elsewhere: string[] = [];
    for (let i = 0; onAhead.length === 0 || elsewhere.length < SCAN_BATCH + 7; i++) {
      const group = `s${String(i).padStart(3, '0')}`;
      const owner = await cluster.ownerOf(keys.groupMetaKey(group));
      if (owner.port === aheadPort) {
        if (onAhead.length === 0) onAhead.push(group);
      } else if (onAhead.length > 0) {
        elsewhere.push(group);
      }
    }
    return [...onAhead, ...elsewhere];
  };

  it('no jump or step is seen, and members that stop heartbeating expire in every group', async () => {
    const skew = (await redisTime(ahead)) - (await redisTime(behind));
    expect(Math.abs(skew - SKEW_MS)).toBeLessThan(1000);
    const groups = await pickGroups();
    expect(groups.length).toBe(SCAN_BATCH + 8);
    for (const group of groups) {
      const joined = await api.post(`/v1/groups/${group}/heartbeat`, {
        memberId: 'm',
        memberEpoch: 0,
        rebalanceTimeoutMs: 10_000,
        subscribedStreams: ['orders'],
        ownedShards: [],
      });
      expect(joined.status).toBe(200);
    }
    // Nobody heartbeats again: every member must be gone a session timeout (plus a few timer
    // rounds and the group-list refresh) later.
    await waitForNoProblems(
      async () => {
        const left: string[] = [];
        for (const group of groups) {
          const g = (await api.get<DescribedGroup>(`/v1/groups/${group}`)).body;
          if ((g.members ?? []).length > 0) left.push(group);
        }
        return left.map((group) => `${group} still has its member`);
      },
      { timeoutMs: SESSION_TIMEOUT_MS * 6, message: 'every member expired', retryErrors: true },
    );
    expect(coordinator.output()).not.toContain('the Redis clock jumped ahead');
    expect(coordinator.output()).not.toContain('the Redis clock stepped back');
  });

  /** The first group name with `namePrefix` whose keys live on the master at `port`. */
  const groupOn = async (port: number | undefined, namePrefix: string): Promise<string> => {
    for (let i = 0; ; i++) {
      const group = `${namePrefix}${i}`;
      if ((await cluster.ownerOf(keys.groupMetaKey(group))).port === port) return group;
    }
  };

  const REBALANCE_TIMEOUT_MS = 4000;

  const beat = async (via: CoordinatorApi, group: string, body: Record<string, unknown>) => {
    const res = await via.post<HeartbeatResponse>(`/v1/groups/${group}/heartbeat`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const full = (memberId: string, memberEpoch: number, shards: readonly number[]) => ({
    memberId,
    memberEpoch,
    rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
    subscribedStreams: ['orders'],
    ownedShards: memberEpoch === 0 ? [] : [{ stream: 'orders', shards }],
  });

  /**
   * In `group`: `a` takes every shard through `api` and never gives any back, `b` joins; then
   * `revoker` (the replica `a`'s next heartbeat, the one that starts its revocation, goes to) hears
   * last from the master of `decoy` (a group on another master), and `a`'s revocation starts
   * there; `during` runs next. Resolves to how long after that heartbeat `a` was removed, while it
   * kept heartbeating.
   */
  const revocationLasts = async (
    group: string,
    decoy: string,
    revoker: CoordinatorApi,
    during: () => Promise<void> = async () => undefined,
  ): Promise<number> => {
    const joined = await beat(api, group, full('a', 0, []));
    const held = joined.assignment?.shards[0]?.shards ?? [];
    expect(held).toEqual([0, 1, 2, 3]);
    let epoch = (await beat(api, group, full('a', joined.memberEpoch, held))).memberEpoch;
    await beat(api, group, full('b', 0, []));
    await beat(revoker, decoy, full(`decoy-${group}`, 0, []));
    const revokingSince = Date.now();
    const revoking = await beat(revoker, group, full('a', epoch, held));
    expect(revoking.diff?.revoking.length, JSON.stringify(revoking)).toBe(1);
    epoch = revoking.memberEpoch;
    // `a` heartbeats on (through both replicas) until it is removed, then its heartbeats are
    // refused; the loop ends there or when this function returns.
    let beating = true;
    const loop = (async () => {
      for (let i = 0; beating; i++) {
        const res = await (i % 2 === 0 ? api : revoker).post<HeartbeatResponse>(
          `/v1/groups/${group}/heartbeat`,
          full('a', epoch, held),
        );
        if (res.status !== 200) return;
        epoch = res.body.memberEpoch;
        await pause(200);
      }
    })().catch(() => undefined);
    try {
      await during();
      let goneAfter = 0;
      await waitForNoProblems(
        async () => {
          const g = (await api.get<DescribedGroup>(`/v1/groups/${group}`)).body;
          if ((g.members ?? []).some((m) => m.memberId === 'a')) return ['a is still a member'];
          goneAfter = Date.now() - revokingSince;
          return [];
        },
        { timeoutMs: REBALANCE_TIMEOUT_MS + 9000, message: `a timed out of its revocation` },
      );
      return goneAfter;
    } finally {
      beating = false;
      await loop;
    }
  };

  // Removed by its rebalance timeout (it kept heartbeating): not before it ran out, and not the
  // skew later (a few session-timer rounds and the polling are the slack).
  const expectFullLength = (goneAfter: number): void => {
    expect(goneAfter).toBeGreaterThanOrEqual(REBALANCE_TIMEOUT_MS - 100);
    expect(goneAfter).toBeLessThan(REBALANCE_TIMEOUT_MS + 2000);
  };

  it('a rebalance timeout runs its full length on the master ahead and on one behind', async () => {
    const aheadPort = cluster.nodes[0]?.port;
    const behindPort = cluster.nodes[1]?.port;
    expectFullLength(
      await revocationLasts(
        await groupOn(aheadPort, 'rt-ahead'),
        await groupOn(behindPort, 'rt-decoy-a'),
        api,
      ),
    );
    expectFullLength(
      await revocationLasts(
        await groupOn(behindPort, 'rt-behind'),
        await groupOn(aheadPort, 'rt-decoy-b'),
        api,
      ),
    );
  });

  it("a replica's first request for a group stamps it on that group's clock", async () => {
    // Another replica, which has not heard of the group when `a`'s revocation starts there.
    const second = await CoordinatorProcess.start({
      prefix,
      redisUrl: cluster.url,
      env: {
        STREAMS: 'orders:4',
        HEARTBEAT_INTERVAL_MS: '300',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    });
    try {
      expectFullLength(
        await revocationLasts(
          await groupOn(cluster.nodes[0]?.port, 'rt-first'),
          await groupOn(cluster.nodes[1]?.port, 'rt-decoy-c'),
          new CoordinatorApi(second.url),
        ),
      );
    } finally {
      await second.stop();
    }
  });

  it('a group moved to the master ahead mid-revocation: a step, nobody removed early', async () => {
    // Its heartbeat times and the revocation's start were taken on the clock behind; on the
    // master ahead they look 5 s older, past the 3 s session timeout. The move must read as a
    // jump of the group's clock (every timer starts over), not expire `a` or cut its timeout.
    const group = await groupOn(cluster.nodes[1]?.port, 'rt-moved');
    const logged = coordinator.output().length;
    const goneAfter = await revocationLasts(
      group,
      await groupOn(cluster.nodes[2]?.port, 'rt-decoy-d'),
      api,
      async () => {
        const moved = await cluster.migrateKeySlot(
          keys.groupMetaKey(group),
          cluster.nodes[0] as { host: string; port: number },
        );
        expect(moved.keysMoved).toBeGreaterThan(0);
      },
    );
    expect(goneAfter).toBeGreaterThanOrEqual(REBALANCE_TIMEOUT_MS - 100);
    // Late by up to the move and one session-timer round (the timers restart at the move).
    expect(goneAfter).toBeLessThan(REBALANCE_TIMEOUT_MS + 4000);
    expect(coordinator.output().slice(logged)).toContain('the Redis clock jumped ahead');
  });
});
