import { resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { useRedisPrefix } from '../support/redis.js';
import { repoRoot } from '../support/service-process.js';
import { allEvents, describeGroup, heartbeat, joinRequest } from './support/coordinator-fixture.js';
import { TestMember } from './support/test-member.js';
import { waitForNoProblems } from '../support/wait.js';

/** The built coordinator with the example ActiveStandbyAssignor registered as a provider. */
const WITH_ACTIVE_STANDBY = resolve(
  repoRoot(),
  'test/coordinator/fixtures/custom-assignor-coordinator.mjs',
);
const SESSION_TIMEOUT_MS = 4000;

/**
 * A deployment drops a custom assignor its groups still name (docs/protocol.md §5.3): the members'
 * stored preference names an assignor no replica has any more. The group must keep working on the
 * default assignor — joins, leaves and expiries succeed, dead members are removed — and the log
 * and the event log say which assignor was asked for and which one ran.
 */
describe('a stored assignor the coordinator no longer has', () => {
  const redis = useRedisPrefix('gone-asg');
  let coordinator: CoordinatorProcess | undefined;
  let other: CoordinatorProcess | undefined;
  afterEach(async () => {
    await Promise.all([coordinator?.stop(), other?.stop()]);
    coordinator = undefined;
    other = undefined;
  });

  it('falls back to the default assignor, and joins, leaves and expiries keep working', async () => {
    const group = 'standby';
    const port = await freePort();
    const env = { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '500' };
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      port,
      entry: WITH_ACTIVE_STANDBY,
      env: { ...env, SESSION_TIMEOUT_MS: '60000' },
    });
    let api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
    const members = ['a', 'b', 'c'].map(
      (id) => new TestMember(api, group, id, ['orders'], { assignor: 'active-standby' }),
    );
    for (const m of members) await m.join();
    expect((await describeGroup(api, group)).assignor).toBe('active-standby');

    // The same deployment without the custom assignor.
    await coordinator.stop();
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      port,
      env: { ...env, SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS) },
    });
    api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);

    // A join and a leave each recompute the target: both succeed (timers are fresh after a
    // start, so nobody expires for a full session timeout).
    const joined = await heartbeat(api, group, joinRequest('d', ['orders']));
    expect(joined.status, JSON.stringify(joined.body)).toBe(200);
    const left = await heartbeat(api, group, { memberId: 'b', memberEpoch: -1 });
    expect(left.status, JSON.stringify(left.body)).toBe(200);
    let described = await describeGroup(api, group);
    expect(described.members.map((m) => m.memberId)).toEqual(['a', 'c', 'd']);
    expect(described.assignor).toBe('uniform');

    // a and c went silent with the old deployment, d never heartbeats again: all three expire.
    await waitForNoProblems(
      async () => {
        described = await describeGroup(api, group);
        return described.members.map((m) => `${m.memberId} still a member`);
      },
      {
        timeoutMs: SESSION_TIMEOUT_MS * 4,
        intervalMs: 100,
        message: 'every silent member expired',
        retryErrors: true,
      },
    );

    const events = await allEvents(api, group);
    const expired = events
      .filter((e) => e.type === 'MEMBER_EXPIRED')
      .map((e) => String(e.data.memberId))
      .sort((x, y) => x.localeCompare(y));
    expect(expired).toEqual(['a', 'c', 'd']);
    const fallbacks = events.filter((e) => e.type === 'ASSIGNOR_FALLBACK');
    // join of d, leave of b, then the expiries while a or c still named it
    expect(fallbacks.length).toBeGreaterThanOrEqual(3);
    for (const e of fallbacks) {
      expect(e.data).toMatchObject({ requested: 'active-standby', used: 'uniform' });
    }
    expect(fallbacks[0]?.data.members).toEqual(['a', 'b', 'c']);
    // every target computed since the restart (after the three joins) ran the default
    const targets = events.filter(
      (e) => e.type === 'TARGET_ASSIGNMENT_CHANGED' && Number(e.data.assignmentEpoch) > 3,
    );
    expect(targets.length).toBeGreaterThanOrEqual(fallbacks.length);
    expect([...new Set(targets.map((e) => e.data.assignor))]).toEqual(['uniform']);
    expect(coordinator.output()).toMatch(
      /group standby: assignor "active-standby" is not configured on this replica; used "uniform"/,
    );
  });

  it('two replicas, one with the assignor and one without: no flapping, one fallback per bump', async () => {
    const group = 'mixed';
    const env = { STREAMS: 'orders:6', HEARTBEAT_INTERVAL_MS: '500', SESSION_TIMEOUT_MS: '60000' };
    // A has active-standby, B does not (a rollout adding or removing it)
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      entry: WITH_ACTIVE_STANDBY,
      env,
    });
    other = await CoordinatorProcess.start({ prefix: redis.prefix, env });
    const viaA = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
    const viaB = new CoordinatorApi(other.url, TEST_TOKENS.member);
    const members = ['a', 'b', 'c'].map(
      (id) => new TestMember(viaA, group, id, ['orders'], { assignor: 'active-standby' }),
    );
    for (const m of members) await m.join();

    // d joins through B: B recomputes without active-standby
    const d = new TestMember(viaB, group, 'd', ['orders']);
    await d.join();
    members.push(d);

    /** Every member heartbeats once, alternating the replica it reaches. */
    let turn = 0;
    const round = async () => {
      for (const m of members) {
        const api = turn++ % 2 === 0 ? viaA : viaB;
        const twin = new TestMember(api, group, m.memberId, m.streams, m.options);
        twin.epoch = m.epoch;
        twin.owned = m.owned;
        await twin.beat();
        m.epoch = twin.epoch;
        m.owned = twin.owned;
      }
    };
    await waitForNoProblems(
      async () => {
        await round();
        const described = await describeGroup(viaA, group);
        return described.state === 'STABLE' ? [] : [described.state];
      },
      {
        timeoutMs: 15_000,
        intervalMs: 0,
        message: 'the group settles with members on both replicas',
        retryErrors: true,
      },
    );
    const settled = await allEvents(viaA, group);
    const fallbacks = settled.filter((e) => e.type === 'ASSIGNOR_FALLBACK');
    // exactly one: the recompute B ran for d's join
    expect(fallbacks.map((e) => e.data.assignmentEpoch)).toEqual([4]);
    const epoch = (await describeGroup(viaA, group)).assignmentEpoch;

    // Heartbeats through both replicas change nothing: neither recomputes the other's target.
    for (let i = 0; i < 10; i++) await round();
    const after = await allEvents(viaA, group);
    const changes = (list: typeof after) =>
      list.filter((e) =>
        ['ASSIGNOR_FALLBACK', 'TARGET_ASSIGNMENT_CHANGED', 'GROUP_EPOCH_BUMPED'].includes(e.type),
      );
    expect(changes(after)).toEqual(changes(settled));
    expect((await describeGroup(viaB, group)).assignmentEpoch).toBe(epoch);
    // each replica's describe names what it would run itself
    expect((await describeGroup(viaA, group)).assignor).toBe('active-standby');
    expect((await describeGroup(viaB, group)).assignor).toBe('uniform');
  });
});
