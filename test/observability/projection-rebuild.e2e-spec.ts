import { resolve } from 'node:path';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { describeGroup as describeFromState } from '../../apps/coordinator/src/groups/group-describer.js';
import { groupGaugeValues } from '../../apps/coordinator/src/metrics/group-gauges.js';
import { GroupProjector } from '../../apps/coordinator/src/projections/group-projector.js';
import {
  projectedGroupState,
  type ProjectedGroup,
} from '../../apps/coordinator/src/projections/group-projection.js';
import { ProjectionStore } from '../../apps/coordinator/src/projections/projection-store.js';
import { GroupStore } from '../../apps/coordinator/src/store/group-store.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import {
  allEvents,
  describeGroup,
  type CoordinatorFixture,
  useCoordinator,
} from '../coordinator/support/coordinator-fixture.js';
import { settle, TestMember } from '../coordinator/support/test-member.js';
import { redisUrl } from '../support/redis.js';
import { repoRoot } from '../support/service-process.js';
import { scrapedGauges } from './support/gauges-from-scrape.js';
import { runNodeTool } from '../support/child-run.js';

const PROJECTIONS_MAIN = resolve(
  repoRoot(),
  'apps/coordinator/dist/projections/projections-main.js',
);

/** The projection machinery over the test's own Redis connection. */
function tools(fx: CoordinatorFixture): {
  store: GroupStore;
  projections: ProjectionStore;
  projector: GroupProjector;
} {
  const keys = new KeySpace(fx.prefix);
  const store = new GroupStore(fx.redis(), keys, { maxLen: 10_000, maxAgeMs: 0 });
  const projections = new ProjectionStore(fx.redis(), keys);
  return { store, projections, projector: new GroupProjector(store, projections) };
}

/**
 * Drops the group's projection key, rebuilds it from the event log alone, and checks that the
 * describe view and the gauge values computed from it equal what the running coordinator serves
 * (`GET /v1/groups/{g}` and `/metrics`).
 */
async function expectRebuildEqualsLive(
  fx: CoordinatorFixture,
  group: string,
): Promise<ProjectedGroup> {
  const { store, projections, projector } = tools(fx);
  await projections.drop(group);
  expect(await fx.redis().exists(projections.key(group))).toBe(0);
  const rebuilt = await projector.rebuild(group);
  expect(rebuilt).not.toBeNull();
  const projection = rebuilt as ProjectedGroup;
  expect(await fx.redis().exists(projections.key(group))).toBe(1);
  const state = projectedGroupState(projection);

  const live = await describeGroup(fx.admin(), group);
  expect(describeFromState(state, await store.lastSeen(group), 'uniform')).toEqual(live);

  const catalog = new StreamRegistry(fx.redis(), new KeySpace(fx.prefix));
  await catalog.refresh();
  const { group: _g, state: _s, ...projected } = groupGaugeValues(state, catalog);
  expect(projected).toEqual(await scrapedGauges(fx.coordinator().url, group));
  return projection;
}

describe('event-log projections: the describe view and the gauges rebuilt from the log alone', () => {
  const fx = useCoordinator('projections', {
    STREAMS: 'orders:6,payments:2',
    SESSION_TIMEOUT_MS: '120000',
  });

  it('equal the live state at every step of joins, revocations, static leaves, leaves and removals', async () => {
    const api = fx.member();
    const g = 'g-proj';
    const a = new TestMember(api, g, 'a', ['orders', 'payments'], { rackId: 'r1' });
    const b = new TestMember(api, g, 'b', ['orders']);
    const c = new TestMember(api, g, 'c', ['orders', 'payments'], { instanceId: 'pod-c' });
    await a.join();
    await expectRebuildEqualsLive(fx, g);

    // b joins: a must revoke, b awaits release (RECONCILING, pending revocation, awaiting release).
    await b.join();
    await a.beat({ ownedShards: a.owned });
    const mid = await describeGroup(api, g);
    expect(mid.state).toBe('RECONCILING');
    await expectRebuildEqualsLive(fx, g);

    await settle(api, g, [a, b]);
    await c.join();
    await expectRebuildEqualsLive(fx, g);
    await settle(api, g, [a, b, c]);
    await expectRebuildEqualsLive(fx, g);

    // c leaves for a while (static -2: TEMPORARILY_LEFT), b leaves for good, a is removed by admin.
    await c.beat({ memberEpoch: -2 });
    expect((await describeGroup(api, g)).members.find((m) => m.memberId === 'c')?.memberEpoch).toBe(
      -2,
    );
    await expectRebuildEqualsLive(fx, g);
    const bTarget =
      (await describeGroup(api, g)).members.find((m) => m.memberId === 'b')?.target ?? [];
    await b.beat({ memberEpoch: -1 });
    await expectRebuildEqualsLive(fx, g);
    expect((await fx.admin().delete(`/v1/groups/${g}/members/a`)).status).toBe(204);
    const last = await expectRebuildEqualsLive(fx, g);
    expect(Object.keys(last.members)).toEqual(['c']);

    // The log says which shards moved, from whom, to whom and why.
    const events = await allEvents(api, g);
    const changes = events.filter((e) => e.type === 'TARGET_ASSIGNMENT_CHANGED');
    expect(changes.map((e) => e.data.reason)).toEqual(
      expect.arrayContaining(['join', 'leave', 'admin']),
    );
    const afterLeave = changes.find((e) => e.data.reason === 'leave');
    const moves = afterLeave?.data.moves as Array<{
      stream: string;
      shard: number;
      from: string | null;
      to: string | null;
    }>;
    const fromB = moves.filter((m) => m.from === 'b');
    expect(fromB.length).toBeGreaterThan(0);
    expect(fromB.every((m) => m.to === 'a' || m.to === 'c')).toBe(true);
    const movedFromB = fromB.map((m) => `${m.stream}/${m.shard}`).sort();
    expect(movedFromB).toEqual(
      bTarget.flatMap((e) => e.shards.map((s) => `${e.stream}/${s}`)).sort(),
    );
    // Every commit wrote its state change; the first one also a checkpoint.
    expect(events.filter((e) => e.type === 'GROUP_STATE_CHANGED').length).toBe(last.version);
    expect(events.some((e) => e.type === 'GROUP_CHECKPOINT')).toBe(true);
  });

  it('catches up incrementally and re-bases when the projection no longer fits the log', async () => {
    const api = fx.member();
    const g = 'g-catchup';
    const { projections, projector } = tools(fx);
    const a = new TestMember(api, g, 'a', ['orders']);
    await a.join();
    const first = await projector.catchUp(g);
    expect(first?.version).toBe(1);
    const b = new TestMember(api, g, 'b', ['orders']);
    await b.join();
    await settle(api, g, [a, b]);
    const next = await projector.catchUp(g);
    expect((next as ProjectedGroup).version).toBeGreaterThan(1);
    expect((await projections.get(g))?.lastEventId).toBe(next?.lastEventId);
    // A projection that claims a version the log does not continue from: rebuilt, not trusted.
    await projections.put(g, { ...(next as ProjectedGroup), version: 999, members: {} }, '*');
    const again = await projector.catchUp(g);
    expect(Object.keys(again?.members ?? {}).sort()).toEqual(['a', 'b']);
    await b.beat({ memberEpoch: -1 });
    const rebased = await projector.catchUp(g);
    expect(Object.keys(rebased?.members ?? {})).toEqual(['a']);
    expect(await projector.catchUp('g-never-written')).toBeNull();
  });

  it('`npm run projections -- verify` rebuilds from the log and exits 1 when the live records differ', async () => {
    const g = 'g-script';
    const api = fx.member();
    const a = new TestMember(api, g, 'a', ['orders']);
    const b = new TestMember(api, g, 'b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    const env = { REDIS_URL: redisUrl(), KEY_PREFIX: fx.prefix };
    const okRun = await runNodeTool(PROJECTIONS_MAIN, ['verify', '--group', g], env);
    expect(okRun.stderr).toBe('');
    expect(okRun.stdout).toMatch(
      new RegExp(
        `^${g}: rebuilt at version \\d+ from \\d+ events .*; equal to the live state`,
        'm',
      ),
    );
    expect(okRun.code).toBe(0);

    // Tamper with the live records behind the log's back: the rebuilt views no longer match.
    const keys = new KeySpace(fx.prefix);
    await fx.redis().hdel(keys.groupMembersKey(g), 'b');
    const bad = await runNodeTool(PROJECTIONS_MAIN, ['verify', '--group', g], env);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain('DIFFERS from the live state');
    expect(bad.stdout).toMatch(/describe\.members/);

    const usage = await runNodeTool(PROJECTIONS_MAIN, ['frobnicate'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown command "frobnicate"');
  });
});

describe('event-log projections with a short retention', () => {
  const fx = useCoordinator('projections-trim', {
    STREAMS: 'orders:4',
    SESSION_TIMEOUT_MS: '120000',
    EVENT_LOG_MAXLEN: '100',
  });

  it('rebuild from the newest retained checkpoint after the log was trimmed', async () => {
    const api = fx.member();
    const g = 'g-trim';
    const keeper = new TestMember(api, g, 'keeper', ['orders']);
    await keeper.join();
    // Churn: a visitor joins, takes shards, leaves — many events per round.
    for (let round = 0; round < 40; round++) {
      const visitor = new TestMember(api, g, `v${round}`, ['orders']);
      await visitor.join();
      await settle(api, g, [keeper, visitor]);
      await visitor.beat({ memberEpoch: -1 });
    }
    await settle(api, g, [keeper]);
    const events = await allEvents(api, g);
    expect(events.length).toBeLessThan(400);
    const firstChange = events.find((e) => e.type === 'GROUP_STATE_CHANGED');
    expect(firstChange?.data.v, 'the log was trimmed').toBeGreaterThan(1);
    const projection = await expectRebuildEqualsLive(fx, g);
    expect(projection.version).toBeGreaterThan(100);
  });
});
