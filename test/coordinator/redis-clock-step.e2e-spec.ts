import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DescribedGroup, GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { createTestRedis, uniquePrefix } from '../support/redis.js';
import {
  startSteppableClockRedis,
  type SteppableClockRedis,
} from '../support/redis-clock/steppable-clock-redis.js';
import { waitFor, waitForNoProblems } from '../support/wait.js';
import { convergenceProblems } from './support/group-checks.js';
import { allEvents, MemberFleet } from './support/member-fleet.js';

const SESSION_TIMEOUT_MS = 3000;
const STREAMS = { orders: 8 } as const;
/** The step: ten session timeouts. */
const STEP_MS = 30_000;
/** An expiry lands within the session timeout plus this: a timer tick (250 ms) and the commit. */
const EXPIRY_BOUND_MS = 1500;
/**
 * A replica reads its list of groups every 8th timer tick (2 s here), so it may start scanning a
 * group created since then that much later.
 */
const GROUP_LIST_MS = 2000;
const REMOVALS = new Set(['MEMBER_EXPIRED', 'MEMBER_FENCED', 'MEMBER_LEFT']);

/**
 * The Redis clock stepped while two coordinator replicas time sessions on it
 * (docs/protocol.md §4.6): Redis runs with an LD_PRELOAD shim whose wall-clock offset the test sets, its monotonic
 * clock untouched, as after an NTP step or a resumed VM. Members heartbeat to either replica at
 * random. A step ahead must expire nobody whose heartbeats keep coming; a step back must not
 * keep a crashed member's shards from the others for the length of the step. Either way a
 * member that stops afterwards is removed within its session timeout.
 */
describe('a Redis clock step, two coordinator replicas', () => {
  const prefix = uniquePrefix('clockstep');
  let redis: SteppableClockRedis;
  let client: Redis;
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  let api: CoordinatorApi;
  let fleet: MemberFleet | undefined;

  beforeAll(async () => {
    redis = await startSteppableClockRedis();
    client = createTestRedis({ url: redis.url });
    const options = {
      prefix,
      redisUrl: redis.url,
      env: {
        STREAMS: 'orders:8',
        HEARTBEAT_INTERVAL_MS: '200',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    };
    // (one at a time: if the second fails to start, afterAll still stops the first)
    a = await CoordinatorProcess.start(options);
    b = await CoordinatorProcess.start(options);
    api = new CoordinatorApi(a.url);
  });
  afterEach(async () => {
    await fleet?.dispose();
    fleet = undefined;
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    client?.disconnect();
    await redis?.dispose();
  });

  /** How far Redis's clock is from this machine's, as `TIME` says (ms). */
  const redisAhead = async (): Promise<number> => {
    const [seconds, micros] = await client.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - Date.now();
  };

  const startFleet = async (group: string, ids: readonly string[]): Promise<MemberFleet> => {
    const replicas = [a.url, b.url];
    fleet = new MemberFleet(group, {
      streams: Object.keys(STREAMS),
      endpoint: () => replicas[Math.floor(Math.random() * replicas.length)] as string,
      maxIntervalMs: 200,
      rebalanceTimeoutMs: 5000,
    });
    for (const id of ids) fleet.add(id);
    await converged(group, ids);
    return fleet;
  };

  const converged = async (group: string, members: readonly string[]): Promise<void> => {
    await waitForNoProblems(
      async () => {
        const g = (await api.get<DescribedGroup>(`/v1/groups/${group}`)).body;
        const problems = convergenceProblems(g, { streams: STREAMS, members });
        return problems.length > 0 ? problems : (fleet?.viewsMatch(g) ?? []);
      },
      {
        timeoutMs: 15_000,
        message: `group ${group} converged on ${members.join(', ')}`,
        retryErrors: true,
      },
    );
  };

  const removalsAfter = async (group: string, count: number): Promise<GroupEventEntry[]> =>
    (await allEvents(api, group)).slice(count).filter((e) => REMOVALS.has(e.type));

  /** Every member answered `n` more heartbeats than in `before` (`counts.ok` per member). */
  const heartbeatsSince = (before: Map<string, number>, n: number): boolean =>
    [...before].every(([id, ok]) => (fleet?.get(id).counts.ok ?? 0) >= ok + n);
  const okCounts = (): Map<string, number> =>
    new Map([...(fleet?.members ?? [])].map(([id, m]) => [id, m.counts.ok]));

  /** Crashes `id` (no leave) and resolves with the ms until the coordinator expired it. */
  const expiryOf = async (group: string, id: string, eventsBefore: number): Promise<number> => {
    await fleet?.get(id).crash();
    return waitFor(
      async () =>
        (await removalsAfter(group, eventsBefore)).some(
          (e) => e.type === 'MEMBER_EXPIRED' && e.data.memberId === id,
        ),
      { timeoutMs: SESSION_TIMEOUT_MS * 4, message: `${id} expired`, intervalMs: 25 },
    );
  };

  it('a step ahead of ten session timeouts expires nobody who heartbeats; a crash still expires in time', async () => {
    const group = 'step-ahead';
    const members = ['m1', 'm2', 'm3', 'm4'];
    await startFleet(group, members);
    const eventsBefore = (await allEvents(api, group)).length;
    const before = okCounts();
    const aLogs = a.output().length;
    const bLogs = b.output().length;

    redis.setOffset(redis.offsetMs + STEP_MS);
    const steppedAt = Date.now();
    expect(await redisAhead()).toBeGreaterThan(STEP_MS - 1000);
    // Both replicas scanned across the step (and said so), and heartbeats went on for a whole
    // session timeout past it: without the step detection every member would be expired.
    await waitFor(
      () =>
        a.output().slice(aLogs).includes('the Redis clock jumped ahead') &&
        b.output().slice(bLogs).includes('the Redis clock jumped ahead') &&
        Date.now() - steppedAt > SESSION_TIMEOUT_MS + EXPIRY_BOUND_MS &&
        heartbeatsSince(before, 10),
      {
        timeoutMs: SESSION_TIMEOUT_MS * 4,
        message: 'both replicas saw the step; a session timeout passed',
      },
    );
    expect(await removalsAfter(group, eventsBefore)).toEqual([]);
    expect(fleet?.totals().unknown).toBe(0);
    expect(fleet?.violations()).toEqual([]);

    const expiredAfter = await expiryOf(group, 'm4', eventsBefore);
    console.log(
      `[clock-step] ahead ${STEP_MS} ms: a crashed member expired after ${expiredAfter} ms`,
    );
    expect(expiredAfter).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 300);
    expect(expiredAfter).toBeLessThan(SESSION_TIMEOUT_MS + EXPIRY_BOUND_MS);
    await converged(group, ['m1', 'm2', 'm3']);
    expect((await removalsAfter(group, eventsBefore)).map((e) => e.data.memberId)).toEqual(['m4']);
    expect(fleet?.violations()).toEqual([]);
  });

  it('a step back of ten session timeouts: a member that crashes just after it expires in time', async () => {
    const group = 'step-back';
    const members = ['n1', 'n2', 'n3', 'n4'];
    await startFleet(group, members);
    const eventsBefore = (await allEvents(api, group)).length;
    const aLogs = a.output().length;
    const bLogs = b.output().length;

    redis.setOffset(redis.offsetMs - STEP_MS);
    expect(await redisAhead()).toBeLessThan(redis.offsetMs + 1000);
    // n4's last heartbeat may have been timed before the step: by Redis's clock now, STEP_MS in
    // the future. (The group is new: a replica may not scan it for GROUP_LIST_MS yet.)
    const expiredAfter = await expiryOf(group, 'n4', eventsBefore);
    console.log(
      `[clock-step] back ${STEP_MS} ms: a crashed member expired after ${expiredAfter} ms`,
    );
    expect(expiredAfter).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 300);
    expect(expiredAfter).toBeLessThan(SESSION_TIMEOUT_MS + GROUP_LIST_MS + EXPIRY_BOUND_MS);
    await converged(group, ['n1', 'n2', 'n3']);
    expect((await removalsAfter(group, eventsBefore)).map((e) => e.data.memberId)).toEqual(['n4']);
    for (const replica of [a.output().slice(aLogs), b.output().slice(bLogs)]) {
      expect(replica).toContain('the Redis clock stepped back');
    }
    expect(fleet?.totals().unknown).toBe(0);
    expect(fleet?.violations()).toEqual([]);
  });
});
