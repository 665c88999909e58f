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

  /** The first group name with `prefix` whose keys live on the master at `port`. */
  const groupOn = async (port: number | undefined, namePrefix: string): Promise<string> => {
    for (let i = 0; ; i++) {
      const group = `${namePrefix}${i}`;
      if ((await cluster.ownerOf(keys.groupMetaKey(group))).port === port) return group;
    }
  };

  it('a rebalance timeout on the master ahead runs its full length', async () => {
    const REBALANCE_TIMEOUT_MS = 4000;
    const onAhead = await groupOn(cluster.nodes[0]?.port, 'rt-a');
    const onBehind = await groupOn(cluster.nodes[1]?.port, 'rt-b');
    const beat = async (group: string, body: Record<string, unknown>) => {
      const res = await api.post<HeartbeatResponse>(`/v1/groups/${group}/heartbeat`, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const full = (memberId: string, memberEpoch: number, shards: number[]) => ({
      memberId,
      memberEpoch,
      rebalanceTimeoutMs: REBALANCE_TIMEOUT_MS,
      subscribedStreams: ['orders'],
      ownedShards: memberEpoch === 0 ? [] : [{ stream: 'orders', shards }],
    });
    // `a` takes every shard of the group on the master ahead, and never gives any back.
    const joined = await beat(onAhead, full('a', 0, []));
    const held = joined.assignment?.shards[0]?.shards ?? [];
    expect(held).toEqual([0, 1, 2, 3]);
    let epoch = (await beat(onAhead, full('a', joined.memberEpoch, held))).memberEpoch;
    // Its heartbeats go on until it is removed (then they are refused) or the test ends.
    let beating = true;
    let inFlight: Promise<unknown> = Promise.resolve();
    let paused = false;
    const loop = (async () => {
      while (beating) {
        if (!paused) {
          const call = api.post<HeartbeatResponse>(
            `/v1/groups/${onAhead}/heartbeat`,
            full('a', epoch, held),
          );
          inFlight = call;
          const res = await call;
          if (res.status !== 200) return;
          epoch = res.body.memberEpoch;
        }
        await pause(200);
      }
    })();
    try {
      // The replica last hears from the master behind, then `b` joins the group on the master
      // ahead: `a` has to revoke two shards, from now on.
      paused = true;
      await inFlight;
      await beat(onBehind, full('other', 0, []));
      // Taken before the call: the revocation starts during it.
      const revokingSince = Date.now();
      await beat(onAhead, full('b', 0, []));
      paused = false;
      let goneAfter: number | undefined;
      await waitForNoProblems(
        async () => {
          const g = (await api.get<DescribedGroup>(`/v1/groups/${onAhead}`)).body;
          if ((g.members ?? []).some((m) => m.memberId === 'a')) return ['a is still a member'];
          goneAfter ??= Date.now() - revokingSince;
          return [];
        },
        { timeoutMs: REBALANCE_TIMEOUT_MS + 6000, message: 'a timed out of its revocation' },
      );
      // Removed by its rebalance timeout (it kept heartbeating), and not before it ran out.
      expect(goneAfter).toBeGreaterThanOrEqual(REBALANCE_TIMEOUT_MS - 200);
    } finally {
      beating = false;
      await loop.catch(() => undefined);
    }
  });
});
