import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  GroupEventEntry,
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorError } from '../../apps/coordinator/src/core/coordinator-error.js';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from './support/in-process-coordinator.js';
import { allEvents } from './support/member-fleet.js';
import { pause, waitForNoProblems } from '../support/wait.js';

const SESSION_TIMEOUT_MS = 1000;
const REBALANCE_TIMEOUT_MS = 700;
/** Removal must happen within the timeout plus this (timer tick = SESSION_TIMEOUT_MS / 10, plus the commit). */
const LATENCY_BOUND_MS = 400;

const join = (memberId: string, rebalanceTimeoutMs = 10_000): HeartbeatRequest => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs,
  subscribedStreams: ['orders'],
  ownedShards: [],
});
const stats = (xs: readonly number[]): string => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0]} / median ${s[Math.floor(s.length / 2)]} / max ${s.at(-1)} ms`;
};

/**
 * Session and rebalance timeouts, measured on a real coordinator process (removal latency past the
 * timeout), and the races of a timer against a heartbeat, driven directly on two in-process
 * "replicas" of the group service.
 */
describe('session and rebalance timers', () => {
  const redis = useRedisPrefix('timers');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: 'orders:4',
        HEARTBEAT_INTERVAL_MS: '100',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    });
    api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  const heartbeat = async (
    group: string,
    body: HeartbeatRequest,
  ): Promise<{ status: number; body: HeartbeatResponse }> =>
    api.post<HeartbeatResponse>(`/v1/groups/${group}/heartbeat`, body);
  const seenAt = async (group: string, memberId: string): Promise<number> =>
    Number(await redis.redis().zscore(new KeySpace(redis.prefix).groupSeenKey(group), memberId));

  it('expires a silent member within the session timeout plus a small bound', async () => {
    const group = 'g-expiry';
    const silent = ['s1', 's2', 's3', 's4', 's5'];
    const lastSeen = new Map<string, number>();
    for (const id of silent) {
      expect((await heartbeat(group, join(id))).status).toBe(200);
      lastSeen.set(id, await seenAt(group, id));
      await pause(137);
    }
    let events: GroupEventEntry[] = [];
    await waitForNoProblems(
      async () => {
        events = (await allEvents(api, group)).filter((e) => e.type === 'MEMBER_EXPIRED');
        return events.length === silent.length ? [] : [`${events.length} expired`];
      },
      {
        timeoutMs: SESSION_TIMEOUT_MS * 4,
        message: 'all silent members expired',
        retryErrors: true,
      },
    );
    const latencies = events.map(
      (e) => Date.parse(e.at) - (lastSeen.get(String(e.data.memberId)) ?? NaN) - SESSION_TIMEOUT_MS,
    );
    console.log(
      `[timers] session expiry after the timeout (${SESSION_TIMEOUT_MS} ms): ${stats(latencies)}`,
    );
    for (const ms of latencies) {
      expect(ms).toBeGreaterThanOrEqual(0);
      expect(ms).toBeLessThan(LATENCY_BOUND_MS);
    }
    expect((await heartbeat(group, { memberId: 's1', memberEpoch: 1 })).body).toMatchObject({
      error: { code: 'UNKNOWN_MEMBER_ID' },
    });
  });

  it('removes a member that never acknowledges its revocation within rebalanceTimeoutMs plus a small bound', async () => {
    const latencies: number[] = [];
    await Promise.all(
      ['g-rto-1', 'g-rto-2', 'g-rto-3'].map(async (group) => {
        const x = await heartbeat(group, join('x', REBALANCE_TIMEOUT_MS));
        expect((await heartbeat(group, join('y'))).status).toBe(200);
        const owned =
          x.body.assignment?.shards.map(({ stream, shards }) => ({ stream, shards })) ?? [];
        // x keeps heartbeating (its session stays alive) but keeps reporting the revoked shards.
        let removed: { status: number; body: HeartbeatResponse } | null = null;
        const deadline = Date.now() + REBALANCE_TIMEOUT_MS * 5;
        while (Date.now() < deadline) {
          const res = await heartbeat(group, {
            memberId: 'x',
            memberEpoch: x.body.memberEpoch,
            ownedShards: owned,
          });
          if (res.status !== 200) {
            removed = res;
            break;
          }
          await pause(50);
        }
        expect(removed?.body).toMatchObject({ error: { code: 'UNKNOWN_MEMBER_ID' } });
        const events = await allEvents(api, group);
        const revoked = events.find((e) => e.type === 'SHARDS_REVOKED' && e.data.memberId === 'x');
        const fenced = events.find((e) => e.type === 'MEMBER_FENCED' && e.data.memberId === 'x');
        expect(revoked && fenced).toBeTruthy();
        latencies.push(
          Date.parse(fenced?.at ?? '') - Date.parse(revoked?.at ?? '') - REBALANCE_TIMEOUT_MS,
        );
      }),
    );
    console.log(
      `[timers] rebalance-timeout removal after the timeout (${REBALANCE_TIMEOUT_MS} ms): ${stats(latencies)}`,
    );
    for (const ms of latencies) {
      // The revocation start is the coordinator's estimate of the Redis clock, taken just before
      // the commit that records SHARDS_REVOKED: it may precede that event's time by a few ms.
      expect(ms).toBeGreaterThanOrEqual(-20);
      expect(ms).toBeLessThan(LATENCY_BOUND_MS);
    }
  });

  describe('timer against heartbeat, on two replicas', () => {
    const replicas: InProcessCoordinator[] = [];
    let one: InProcessCoordinator;
    let two: InProcessCoordinator;
    beforeAll(async () => {
      const prefix = `${redis.prefix}-race`;
      one = await startInProcessCoordinator({ prefix, streams: { orders: 4 } });
      two = await startInProcessCoordinator({ prefix });
      replicas.push(one, two);
    });
    afterAll(async () => {
      const { cleanupPrefix } = await import('../support/redis.js');
      await cleanupPrefix(redis.redis(), `${redis.prefix}-race`);
      await Promise.all(replicas.map((r) => r.close()));
    });

    const seen = async (group: string, memberId: string): Promise<number> =>
      Number(await one.redis.zscore(one.keys.groupSeenKey(group), memberId));

    it('a heartbeat that lands after the expiry decision wins: the commit re-checks `seen` atomically', async () => {
      const group = 'g-race-det';
      await one.coordinator.heartbeat(group, join('m'), null);
      // Replica one decides m is stale as of now; replica two then serves a heartbeat from m
      // (a plain one: no version change, so only the `seen` re-check can stop the expiry).
      await pause(5);
      const cutoff = (await seen(group, 'm')) + 1;
      await pause(5);
      await two.coordinator.heartbeat(group, { memberId: 'm', memberEpoch: 1 }, null);
      expect(await seen(group, 'm')).toBeGreaterThan(cutoff);
      expect(
        await one.coordinator.expire(group, 'm', { reason: 'expiry', seenBefore: cutoff }),
      ).toBe(false);
      expect((await two.coordinator.read(group)).state.members.has('m')).toBe(true);
      // Without a newer heartbeat the same removal goes through.
      expect(
        await one.coordinator.expire(group, 'm', {
          reason: 'expiry',
          seenBefore: (await seen(group, 'm')) + 1,
        }),
      ).toBe(true);
      expect((await two.coordinator.read(group)).state.members.has('m')).toBe(false);
    });

    it('concurrent expiry and heartbeat: exactly one of them wins, every time', async () => {
      const group = 'g-race';
      let expiredWins = 0;
      let heartbeatWins = 0;
      for (let i = 0; i < 40; i++) {
        const id = `m${i}`;
        const joined = (await one.coordinator.heartbeat(
          group,
          join(id),
          null,
        )) as HeartbeatResponse;
        const cutoff = (await seen(group, id)) + 1;
        await two.coordinator.read(group); // both replicas current: each side is one Lua call
        await pause(2);
        // Either side may start first, by up to a few ms, so both outcomes happen.
        const head = Math.random() * 6 - 3;
        const [expired, hb] = await Promise.all([
          pause(Math.max(0, head)).then(() =>
            one.coordinator.expire(group, id, { reason: 'expiry', seenBefore: cutoff }),
          ),
          pause(Math.max(0, -head))
            .then(() =>
              two.coordinator.heartbeat(
                group,
                { memberId: id, memberEpoch: joined.memberEpoch },
                null,
              ),
            )
            .then(
              () => 'ok' as const,
              (error: unknown) => {
                if (error instanceof CoordinatorError && error.code === 'UNKNOWN_MEMBER_ID')
                  return 'unknown' as const;
                throw error;
              },
            ),
        ]);
        const present = (await one.coordinator.read(group)).state.members.has(id);
        expect([expired, hb, present]).toEqual(
          expired ? [true, 'unknown', false] : [false, 'ok', true],
        );
        if (expired) expiredWins++;
        else heartbeatWins++;
        if (present)
          await one.coordinator.heartbeat(group, { memberId: id, memberEpoch: -1 }, null);
      }
      console.log(
        `[timers] expiry vs heartbeat races: expiry won ${expiredWins}, heartbeat won ${heartbeatWins}`,
      );
      expect(expiredWins + heartbeatWins).toBe(40);
    });

    it('an expiry decided before a step back of the Redis clock is dropped when the heartbeat time it read changed, even to below its cutoff', async () => {
      const STEP = 30_000;
      const redisNow = async (): Promise<number> => {
        const [seconds, micros] = await one.redis.time();
        return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      };
      /**
       * Replica one's scan ran while Redis's clock was STEP ahead and read m's last heartbeat at
       * `seenAt` (stale against its cutoff); the clock then stepped back.
       */
      const decided = async (group: string) => {
        await one.coordinator.heartbeat(group, join('m'), null);
        await two.coordinator.read(group);
        const decidedAt = (await redisNow()) + STEP;
        const seenAt = decidedAt - 10_000;
        await one.redis.zadd(one.keys.groupSeenKey(group), seenAt, 'm');
        return { seenAt, cutoff: decidedAt - 3000 };
      };
      const expire = (group: string, d: { seenAt: number; cutoff: number }, exact: boolean) =>
        one.coordinator.expire(group, 'm', {
          reason: 'expiry',
          seenBefore: d.cutoff,
          ...(exact ? { seenAt: d.seenAt } : {}),
        });

      // m heartbeats after the step: timed on the clock now behind, below the cutoff.
      const hb = await decided('g-step-back-heartbeat');
      await two.coordinator.heartbeat(
        'g-step-back-heartbeat',
        { memberId: 'm', memberEpoch: 1 },
        null,
      );
      expect(await seen('g-step-back-heartbeat', 'm')).toBeLessThan(hb.cutoff);
      // Another scan lowers m's time, which lies in Redis's future, to now: below the cutoff too.
      const scanned = await decided('g-step-back-scan');
      await two.store.scan('g-step-back-scan', 3000);
      expect(await seen('g-step-back-scan', 'm')).toBeLessThan(scanned.cutoff);

      expect(await expire('g-step-back-heartbeat', hb, true)).toBe(false);
      expect(await expire('g-step-back-scan', scanned, true)).toBe(false);
      for (const group of ['g-step-back-heartbeat', 'g-step-back-scan']) {
        expect((await two.coordinator.read(group)).state.members.has('m')).toBe(true);
      }
      // The cutoff alone would let both through.
      expect(await expire('g-step-back-heartbeat', hb, false)).toBe(true);
      expect(await expire('g-step-back-scan', scanned, false)).toBe(true);
    });

    it('an expiry whose heartbeat time is unchanged commits', async () => {
      const group = 'g-exact';
      await one.coordinator.heartbeat(group, join('m'), null);
      await pause(5);
      const scan = await one.store.scan(group, 1);
      expect(scan.stale).toEqual([{ memberId: 'm', seenAt: await seen(group, 'm') }]);
      expect(
        await two.coordinator.expire(group, 'm', {
          reason: 'expiry',
          seenBefore: scan.now - 1,
          seenAt: scan.stale[0]?.seenAt as number,
        }),
      ).toBe(true);
    });

    it('a rebalance-timeout removal is dropped when the member left that revocation meanwhile', async () => {
      const group = 'g-rto-race';
      const x = (await one.coordinator.heartbeat(group, join('x'), null)) as HeartbeatResponse;
      await one.coordinator.heartbeat(group, join('y'), null);
      const first = (await one.coordinator.heartbeat(
        group,
        { memberId: 'x', memberEpoch: x.memberEpoch },
        null,
      )) as HeartbeatResponse;
      const firstRevocation =
        (await one.coordinator.read(group)).state.members.get('x')?.revokeStartedAt ?? null;
      expect(firstRevocation).not.toBeNull();
      // A timer read that state and finds the revocation overdue; meanwhile, on the other replica,
      // x acknowledges it, y leaves (x gets everything back), z joins and x must revoke again.
      const kept = first.assignment?.shards ?? [];
      const acked = (await two.coordinator.heartbeat(
        group,
        {
          memberId: 'x',
          memberEpoch: x.memberEpoch,
          ownedShards: kept.map(({ stream, shards }) => ({ stream, shards })),
        },
        null,
      )) as HeartbeatResponse;
      await two.coordinator.heartbeat(group, { memberId: 'y', memberEpoch: -1 }, null);
      const all = (await two.coordinator.heartbeat(
        group,
        { memberId: 'x', memberEpoch: acked.memberEpoch },
        null,
      )) as HeartbeatResponse;
      expect(all.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
      await two.coordinator.heartbeat(group, join('z'), null);
      await pause(5);
      const again = (await two.coordinator.heartbeat(
        group,
        { memberId: 'x', memberEpoch: all.memberEpoch },
        null,
      )) as HeartbeatResponse;
      expect(again.diff.revoking[0]?.shards.length).toBe(2);
      const secondRevocation =
        (await two.coordinator.read(group)).state.members.get('x')?.revokeStartedAt ?? null;
      expect(secondRevocation).not.toBe(firstRevocation);
      // The stale decision is refused; one based on the current revocation goes through.
      expect(
        await one.coordinator.expire(group, 'x', {
          reason: 'rebalance-timeout',
          revokeStartedAt: firstRevocation ?? 0,
        }),
      ).toBe(false);
      expect((await one.coordinator.read(group)).state.members.has('x')).toBe(true);
      expect(
        await one.coordinator.expire(group, 'x', {
          reason: 'rebalance-timeout',
          revokeStartedAt: secondRevocation ?? 0,
        }),
      ).toBe(true);
      expect((await one.coordinator.read(group)).state.members.has('x')).toBe(false);
    });
  });
});
