import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DescribedGroup, KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { decodeMember } from '../../apps/coordinator/src/store/group-records.js';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { CommittedStateSampler } from './support/committed-state-sampler.js';
import { convergenceProblems, describedDoubleOwners } from './support/group-checks.js';
import { allEvents, epochBumpProblems, MemberFleet } from './support/member-fleet.js';
import { allShards } from './support/shard-set.js';
import { pause, waitForNoProblems } from '../support/wait.js';

const GROUP = 'restart-g';
const STREAMS = { orders: 12, payments: 6 } as const;
const SESSION_TIMEOUT_MS = 10_000;
const HEARTBEAT_INTERVAL_MS = 300;
/** Revoked shards stay held this long, so the rebalance is still under way when the kill lands. */
const REVOKE_DELAY_MS = 1000;

/**
 * Durability: SIGKILL the coordinator in the middle of a rebalance and start it again on the same
 * port, Redis and prefix. The group must pick up where it was (no epoch goes back, no shard ever has
 * two owners in the members' view, in the committed state or in the fences) and every member gets a
 * fresh session and rebalance timer at load, so a member cut off for longer than the session
 * timeout — counted from its last heartbeat before the crash — is not expired.
 */
describe('coordinator restart in the middle of a rebalance', () => {
  const redis = useRedisPrefix('restart');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  let fleet: MemberFleet;
  let sampler: CommittedStateSampler;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: 'orders:12,payments:6',
        HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    });
    api = new CoordinatorApi(coordinator.url);
    fleet = new MemberFleet(GROUP, {
      streams: Object.keys(STREAMS),
      endpoint: () => coordinator.url,
      rebalanceTimeoutMs: SESSION_TIMEOUT_MS,
      revokeDelayMs: REVOKE_DELAY_MS,
      jitter: 0.3,
      selfFenceMarginMs: 1000,
    });
    sampler = new CommittedStateSampler({
      redis: redis.redis(),
      prefix: redis.prefix,
      groupId: GROUP,
      shards: allShards(STREAMS),
      monitor: fleet.monitor,
    });
  });

  afterAll(async () => {
    await fleet?.dispose();
    await coordinator?.stop();
  });

  const describeGroup = async (): Promise<DescribedGroup> => {
    const res = await api.get<DescribedGroup>(`/v1/groups/${GROUP}`);
    if (res.status !== 200) throw new Error(`describe → ${res.status}`);
    return res.body;
  };
  const converged = (members: string[]) => async (): Promise<string[]> => {
    const g = await describeGroup();
    const problems = convergenceProblems(g, { streams: STREAMS, members });
    return problems.length > 0 ? problems : fleet.viewsMatch(g);
  };

  it('resumes from Redis with fresh timers and never gives a shard two owners', async () => {
    sampler.start(15);
    const initial = ['m1', 'm2', 'm3', 'm4'];
    for (const id of initial) fleet.add(id);
    await waitForNoProblems(converged(initial), {
      timeoutMs: 15_000,
      message: '4 members stable',
      retryErrors: true,
    });
    const epochBefore = (await describeGroup()).groupEpoch;

    // m5 joins: the others must revoke (and hold their revoked shards for REVOKE_DELAY_MS), m5 waits.
    fleet.add('m5');
    let laggard = '';
    await waitForNoProblems(
      async () => {
        const g = await describeGroup();
        const revoking = g.members.find((m) => m.state === 'UNREVOKED_SHARDS');
        if (revoking) laggard = revoking.memberId;
        return revoking
          ? []
          : [`states: ${g.members.map((m) => `${m.memberId}=${m.state}`).join(' ')}`];
      },
      { timeoutMs: 10_000, intervalMs: 5, message: 'a member revoking', retryErrors: true },
    );
    // Cut the revoking member off (it stays away past the session timeout), then crash the coordinator.
    fleet.get(laggard).pause();
    await coordinator.kill();
    const killedAt = Date.now();

    // The premise: the committed state at the crash is mid-rebalance.
    const committed = Object.values(
      await redis.redis().hgetall(new KeySpace(redis.prefix).groupMembersKey(GROUP)),
    ).map(decodeMember);
    const states = committed.map((m) => `${m.memberId}=${m.state}@${m.memberEpoch}`);
    expect(
      committed.some((m) => m.state === 'UNREVOKED_SHARDS'),
      states.join(' '),
    ).toBe(true);
    expect(committed.find((m) => m.memberId === laggard)?.state).toBe('UNREVOKED_SHARDS');
    const epochAtCrash = Number(
      await redis.redis().hget(new KeySpace(redis.prefix).groupMetaKey(GROUP), 'groupEpoch'),
    );
    expect(epochAtCrash).toBe(epochBefore + 1);

    // Down for 60% of the session timeout, plus the start-up time of the new process.
    await pause(SESSION_TIMEOUT_MS * 0.6);
    await coordinator.restart();
    const restartedAt = Date.now();
    const outageMs = restartedAt - killedAt;

    // The laggard comes back half a session timeout after the restart: its last heartbeat is then
    // more than a session timeout old, and so is its revocation. Fresh timers must keep it.
    await pause(SESSION_TIMEOUT_MS * 0.5);
    const laggardSilentMs = Date.now() - killedAt;
    fleet.get(laggard).resume();

    const everyone = [...initial, 'm5'];
    await waitForNoProblems(converged(everyone), {
      timeoutMs: 20_000,
      message: '5 members stable after the restart',
      retryErrors: true,
    });
    await sampler.stop();

    const final = await describeGroup();
    const events = await allEvents(api, GROUP);
    const removals = events.filter((e) =>
      ['MEMBER_EXPIRED', 'MEMBER_FENCED', 'MEMBER_REMOVED', 'MEMBER_LEFT'].includes(e.type),
    );
    const totals = fleet.totals();
    console.log(
      `[restart] laggard=${laggard} outage=${outageMs}ms laggard silent=${laggardSilentMs}ms ` +
        `(session timeout ${SESSION_TIMEOUT_MS}ms) epochs ${epochBefore}→${epochAtCrash}→${final.groupEpoch} ` +
        `samples=${sampler.samples} monitor updates=${fleet.monitor.updates} totals=${JSON.stringify(totals)}`,
    );

    expect(laggardSilentMs).toBeGreaterThan(SESSION_TIMEOUT_MS);
    expect(removals.map((e) => `${e.type} ${String(e.data.memberId)}`)).toEqual([]);
    expect(totals.unknown).toBe(0);
    expect(totals.fenced).toBe(0);
    expect(fleet.get(laggard).counts.selfFenced).toBeGreaterThanOrEqual(1);
    // Epochs continue: nothing bumped the group epoch after the join that started the rebalance.
    expect(final.groupEpoch).toBe(epochAtCrash);
    for (const m of fleet.members.values()) {
      expect(m.epochs.at(-1)).toBe(final.assignmentEpoch);
    }
    expect(epochBumpProblems(events)).toEqual([]);
    expect(describedDoubleOwners(final)).toEqual([]);
    expect(sampler.samples).toBeGreaterThan(100);
    expect(sampler.violations).toEqual([]);
    expect(fleet.violations()).toEqual([]);
  });
});
