import { describe, expect, it } from 'vitest';
import { RoutingTable, ROUTING_SLOTS, slotOf } from '@redis-stream-coordinator/nestjs/protocol';
import {
  draining,
  observation,
  observeAll,
  published,
  refusalCode,
} from '../../../../../test/support/reshard-spec-helpers.js';
import {
  abandonGroup,
  applyObservation,
  beginReshard,
  finishReshard,
  fullyMirrored,
  markClosed,
  pendingGroupEvents,
  publishLayout,
  ReshardStateError,
  withMirrored,
  withNextVersion,
} from './reshard-steps.js';
import { reshardingStatus } from './reshard-status.js';
import {
  activeShardIds,
  consumableShards,
  newStreamRecord,
  type StreamRecord,
} from './stream-record.js';

const base = (shards: number): StreamRecord => newStreamRecord('orders', shards, 0);
const key = (id: number): string => `rsc:{orders:${id}}`;

describe('beginReshard', () => {
  it('reserves fresh ids after the highest ever, keeps routing and shards, logs the request', () => {
    const begun = beginReshard(base(8), { shards: 12, mode: 'strict' }, 1024, 5);
    if (begun.kind !== 'started') throw new Error('not started');
    const r = begun.record;
    expect(r.nextShardId).toBe(20);
    expect(r.resharding?.toShards).toEqual([8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(r.resharding?.fromShards).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(r.resharding?.state).toBe('preparing');
    expect(r.routing).toEqual(base(8).routing);
    expect(r.routingEpoch).toBe(1);
    expect(r.shards).toEqual(base(8).shards);
    expect(begun.events.map((e) => e.type)).toEqual(['RESHARD_REQUESTED']);
    expect(r.version).toBe(1);
    expect(withNextVersion(base(8), r).version).toBe(2);
  });

  it('refuses while a reshard runs (409) and bad counts (400); same count is a no-op', () => {
    const running = published(base(4), 8, ['g']);
    expect(refusalCode(() => beginReshard(running, { shards: 2, mode: 'strict' }, 1024, 0))).toBe(
      'RESHARD_IN_PROGRESS',
    );
    for (const bad of [0, -1, 1.5, 1025, Number.NaN]) {
      expect(
        refusalCode(() => beginReshard(base(4), { shards: bad, mode: 'strict' }, 1024, 0)),
        String(bad),
      ).toBe('INVALID_REQUEST');
    }
    expect(beginReshard(base(4), { shards: 4, mode: 'strict' }, 1024, 0).kind).toBe('unchanged');
  });

  it('refuses a step in the wrong state', () => {
    expect(() => markClosed(base(4), 0)).toThrow(ReshardStateError);
    expect(() => publishLayout(draining(base(2), 3, []), [], 0)).toThrow(/needs state preparing/);
  });
});

describe('publishLayout', () => {
  for (const [from, to] of [
    [8, 12],
    [12, 5],
    [1, 16],
    [16, 1],
    [8, 16],
    [16, 4],
    [4, 5],
  ] as const) {
    it(`${from}→${to}: old shards draining, new ones active; every key's new shard lists its old shard as a parent`, () => {
      const before = base(from);
      const after = published(before, to, ['g']);
      expect(after.routingEpoch).toBe(2);
      expect(after.resharding?.state).toBe('closing');
      expect(after.shards.filter((s) => s.state === 'draining').map((s) => s.id)).toEqual(
        activeShardIds(before),
      );
      expect(activeShardIds(after)).toEqual(Array.from({ length: to }, (_, i) => from + i));
      const oldTable = new RoutingTable(before.routing);
      const newTable = new RoutingTable(after.routing);
      const parentsOf = new Map(after.shards.map((s) => [s.id, s.parents]));
      // Every slot: the old shard of the slot is a parent of the new shard of the slot.
      const shardAt = (fn: StreamRecord['routing'], slot: number): number | undefined =>
        fn.ranges.find((x) => x.from <= slot && slot < x.to)?.shard;
      const orphans: string[] = [];
      for (let slot = 0; slot < ROUTING_SLOTS; slot++) {
        const o = shardAt(before.routing, slot) as number;
        const n = shardAt(after.routing, slot) as number;
        if (!parentsOf.get(n)?.includes(o)) orphans.push(`slot ${slot}: ${o} → ${n}`);
      }
      expect(orphans).toEqual([]);
      // And keys agree with slots.
      for (const k of ['a', 'customer-17', 'ü']) {
        const slot = slotOf(k);
        expect(parentsOf.get(newTable.shardFor(k))).toContain(oldTable.shardFor(k));
        expect(slot).toBeGreaterThanOrEqual(0);
      }
      // A parent list holds only old shards, and each old shard feeds at least one new shard.
      const parents = new Set(after.shards.flatMap((s) => s.parents));
      expect([...parents].sort((a, b) => a - b)).toEqual(activeShardIds(before));
    });
  }

  it('tracks the groups; tracked groups see old shards, untracked ones only the new', () => {
    const r = published(base(2), 4, ['b', 'a', 'a']);
    expect(r.resharding?.groups).toEqual(['a', 'b']);
    expect(r.resharding?.mirrored).toEqual({ a: 0, b: 0 });
    expect(consumableShards(r, 'a')).toEqual([0, 1]);
    expect(consumableShards(r, 'late')).toEqual([2, 3, 4, 5]);
  });
});

describe('strict drain, release and removal (2 → 4, groups a and b)', () => {
  // Old 0 feeds new 2, 3; old 1 feeds new 4, 5.
  const start = draining(base(2), 4, ['a', 'b']);

  it('closes, then a drained shard leaves the group view and its children enter it (only for that group)', () => {
    expect(start.resharding?.state).toBe('draining');
    expect(start.shards.find((s) => s.id === 2)?.parents).toEqual([0]);
    const step = applyObservation(
      start,
      observation([[0, 'a']], { a: { holds: new Set([0, 1]) }, b: { holds: new Set() } }),
    );
    expect(step.events.map((e) => [e.type, e.data.shard, e.data.group])).toEqual([
      ['RESHARD_SHARD_DRAINED', 0, 'a'],
    ]);
    expect(step.remove).toEqual([]);
    expect(consumableShards(step.record, 'a')).toEqual([1, 2, 3]);
    expect(consumableShards(step.record, 'b')).toEqual([0, 1]);
  });

  it('releases only after the drain was persisted, and removes a shard once every group released it', () => {
    // Drained and not held in the same observation: drained now, released only on the next one.
    let r = applyObservation(
      start,
      observation(
        [
          [0, 'a'],
          [0, 'b'],
        ],
        { a: {}, b: {} },
      ),
    ).record;
    expect(r.resharding?.released).toEqual({});
    const second = applyObservation(r, observation([], { a: {}, b: { holds: new Set([0]) } }));
    expect(second.record.resharding?.released).toEqual({ '0': ['a'] });
    expect(second.remove).toEqual([]);
    r = second.record;
    const third = applyObservation(r, observation([], { a: {}, b: {} }));
    expect(third.remove).toEqual([0]);
    expect(third.record.shards.map((s) => s.id)).toEqual([1, 2, 3, 4, 5]);
    expect(third.events.map((e) => e.type)).toEqual([
      'RESHARD_SHARD_RELEASED',
      'RESHARD_SHARD_REMOVED',
    ]);
    // A removed parent counts as drained for the children.
    expect(consumableShards(third.record, 'b')).toEqual([1, 2, 3]);
  });

  it('completes when every old shard is removed, and finishes after every group log caught up', () => {
    const all = observation(
      [
        [0, 'a'],
        [0, 'b'],
        [1, 'a'],
        [1, 'b'],
      ],
      { a: {}, b: {} },
    );
    const r = observeAll(start, [all, all]);
    expect(r.resharding?.state).toBe('completing');
    expect(r.shards.map((s) => s.id)).toEqual([2, 3, 4, 5]);
    expect(r.resharding?.log.at(-1)?.type).toBe('RESHARD_COMPLETED');
    expect(fullyMirrored(r.resharding as NonNullable<StreamRecord['resharding']>)).toBe(false);
    const caughtUp = withMirrored(
      r,
      new Map([
        ['a', 99],
        ['b', 99],
      ]),
    );
    expect(fullyMirrored(caughtUp.resharding as NonNullable<StreamRecord['resharding']>)).toBe(
      true,
    );
    expect(caughtUp.resharding?.log).toEqual([]);
    const done = finishReshard(caughtUp);
    expect(done.resharding).toBeNull();
    expect(consumableShards(done, 'a')).toEqual([2, 3, 4, 5]);
    expect(reshardingStatus(done, key)).toBeNull();
  });

  it('changes nothing (same object) when nothing was observed', () => {
    const step = applyObservation(start, observation([], { a: {}, b: {} }));
    expect(step.record).toBe(start);
    expect(step.events).toEqual([]);
  });

  it('ignores drains of groups it does not wait for and of shards that are not old', () => {
    const step = applyObservation(
      start,
      observation(
        [
          [0, 'zzz'],
          [2, 'a'],
        ],
        { a: {}, b: {} },
      ),
    );
    expect(step.record).toBe(start);
  });
});

describe('groups the change stops waiting for', () => {
  const start = draining(base(2), 3, ['a', 'gone', 'idle']);

  it('a deleted group is abandoned at once; an idle one never: its old shards stay until it drains them', () => {
    let r = applyObservation(
      start,
      observation(
        [],
        { a: {}, gone: { status: 'deleted' }, idle: { status: 'idle' } },
        10_000,
        1000,
      ),
    ).record;
    expect(Object.keys(r.resharding?.abandoned ?? {})).toEqual(['gone']);
    expect(r.resharding?.idleSince).toEqual({ idle: 10_000 });
    // Long past the notice: logged once, still waited for, nothing removed.
    const noticed = applyObservation(
      r,
      observation(
        [
          [0, 'a'],
          [1, 'a'],
        ],
        { a: {}, idle: { status: 'idle' } },
        11_000,
        1000,
      ),
    );
    expect(
      noticed.events.filter((e) => e.type === 'RESHARD_GROUP_IDLE').map((e) => e.data),
    ).toEqual([{ stream: 'orders', group: 'idle', idleMs: 1000, shards: [0, 1] }]);
    r = noticed.record;
    for (const now of [20_000, 86_400_000]) {
      const later = applyObservation(
        r,
        observation(
          [
            [0, 'a'],
            [1, 'a'],
          ],
          { a: {}, idle: { status: 'idle' } },
          now,
          1000,
        ),
      );
      expect(later.events.map((e) => e.type)).not.toContain('RESHARD_GROUP_IDLE');
      r = later.record;
    }
    expect(Object.keys(r.resharding?.abandoned ?? {})).toEqual(['gone']);
    expect(r.shards.filter((s) => s.state === 'draining').map((s) => s.id)).toEqual([0, 1]);
    expect(consumableShards(r, 'idle')).toEqual([0, 1]);
    const status = reshardingStatus(r, key);
    expect(status?.abandonedGroups.map((g) => [g.group, g.reason])).toEqual([['gone', 'deleted']]);
    expect(status?.idleGroups).toEqual([{ group: 'idle', since: new Date(10_000).toISOString() }]);
    expect(status?.drain[0]?.pendingGroups).toEqual(['idle']);
    // It comes back and drains: only then are the old shards removed.
    r = applyObservation(
      r,
      observation(
        [
          [0, 'idle'],
          [1, 'idle'],
        ],
        { a: {}, idle: {} },
        90_000_000,
      ),
    ).record;
    const removed = applyObservation(r, observation([], { a: {}, idle: {} }, 90_000_100));
    expect(removed.remove).toEqual([0, 1]);
  });

  it('an idle group that comes back has its idle period cleared; a new one is reported again', () => {
    let r = applyObservation(
      start,
      observation([], { a: {}, gone: {}, idle: { status: 'idle' } }, 10_000),
    ).record;
    r = applyObservation(
      r,
      observation([], { a: {}, gone: {}, idle: { status: 'idle' } }, 11_000),
    ).record;
    expect(r.resharding?.idleReported).toEqual(['idle']);
    r = applyObservation(r, observation([], { a: {}, gone: {}, idle: {} }, 11_900)).record;
    expect(r.resharding?.idleSince).toEqual({});
    expect(r.resharding?.idleReported).toEqual([]);
    const again = applyObservation(
      applyObservation(r, observation([], { a: {}, gone: {}, idle: { status: 'idle' } }, 12_000))
        .record,
      observation([], { a: {}, gone: {}, idle: { status: 'idle' } }, 13_000),
    );
    expect(again.events.map((e) => [e.type, e.data.idleMs])).toEqual([
      ['RESHARD_GROUP_IDLE', 1000],
    ]);
    expect(again.record.resharding?.abandoned).toEqual({});
  });

  it('with no group to wait for, closed shards are removed at the first observation', () => {
    const r = draining(base(3), 2, []);
    const step = applyObservation(r, observation([], {}));
    expect(step.remove).toEqual([0, 1, 2]);
    expect(step.record.resharding?.state).toBe('completing');
  });
});

describe('abandonGroup: an admin gives up the old shards of a group', () => {
  const start = draining(base(2), 3, ['a', 'idle']);

  it('stops waiting for the group, logs what it gives up, and lets the next step delete', () => {
    const r = applyObservation(
      start,
      observation(
        [
          [0, 'a'],
          [1, 'a'],
        ],
        { a: {}, idle: { status: 'idle' } },
      ),
    ).record;
    const out = abandonGroup(r, 'idle', 20_000, { active: false });
    if (out.kind !== 'abandoned') throw new Error('expected abandoned');
    expect(out.events.map((e) => [e.type, e.data])).toEqual([
      [
        'RESHARD_GROUP_ABANDONED',
        { stream: 'orders', group: 'idle', reason: 'admin', shards: [0, 1] },
      ],
    ]);
    const ra = out.record.resharding;
    expect(ra?.abandoned.idle).toEqual({ reason: 'admin', at: 20_000 });
    expect(ra?.idleSince).toEqual({});
    expect(consumableShards(out.record, 'idle')).toEqual([2, 3, 4]);
    expect(reshardingStatus(out.record, key)?.abandonedGroups).toEqual([
      { group: 'idle', reason: 'admin', at: new Date(20_000).toISOString() },
    ]);
    expect(pendingGroupEvents(out.record, 'idle').map((e) => e.type)).toContain(
      'RESHARD_GROUP_ABANDONED',
    );
    // Released by `a` (drained in the persisted record, not held): removed.
    const next = applyObservation(out.record, observation([], { a: {} }, 20_100));
    expect(next.remove).toEqual([0, 1]);
    expect(abandonGroup(out.record, 'idle', 30_000, { active: false })).toEqual({
      kind: 'unchanged',
    });
  });

  it('refuses with a clear code when there is nothing to abandon, and changes nothing', () => {
    expect(refusalCode(() => abandonGroup(base(2), 'a', 0, { active: false }))).toBe('NOT_FOUND');
    expect(refusalCode(() => abandonGroup(start, 'other', 0, { active: false }))).toBe('NOT_FOUND');
    const begun = beginReshard(base(2), { shards: 3, mode: 'strict' }, 1024, 0);
    if (begun.kind !== 'started') throw new Error('not started');
    expect(refusalCode(() => abandonGroup(begun.record, 'a', 0, { active: false }))).toBe(
      'RESHARD_IN_PROGRESS',
    );
  });

  it('refuses a group with a subscribed member (it drains by itself), changing nothing', () => {
    // A typo or a stale runbook must not delete the backlog of a group that is consuming.
    const before = structuredClone(start);
    expect(refusalCode(() => abandonGroup(start, 'a', 0, { active: true }))).toBe(
      'GROUP_NOT_EMPTY',
    );
    expect(start).toEqual(before);
    expect(abandonGroup(start, 'a', 0, { active: false }).kind).toBe('abandoned');
  });
});

describe('groups tracked late (a consumer group on an old shard, not tracked)', () => {
  it('is tracked in strict order before any shard it reads is deleted, and waited for until it drains', () => {
    const r = draining(base(2), 3, [], 'relaxed');
    // Shard 1 had nothing for it (drained); shard 0 has its backlog.
    const step = applyObservation(r, {
      ...observation([[1, 'late']], { late: {} }),
      found: new Map([['late', [0]]]),
    });
    expect(step.remove).toEqual([]);
    expect(step.events.map((e) => [e.type, e.data.group, e.data.shard ?? e.data.shards])).toEqual([
      ['RESHARD_GROUP_TRACKED', 'late', [0]],
      ['RESHARD_SHARD_DRAINED', 'late', 1],
    ]);
    const rs = step.record.resharding;
    expect(rs?.groups).toEqual(['late']);
    expect(rs?.strict).toEqual(['late']);
    expect(rs?.mirrored).toEqual({ late: 0 });
    // Strict for it although the change is relaxed: the old shard first, then its children.
    expect(consumableShards(step.record, 'late')).toEqual([0, 4]);
    const kept = applyObservation(step.record, observation([], { late: {} }, 11_000));
    expect(kept.remove).toEqual([1]);
    const drained = applyObservation(kept.record, observation([[0, 'late']], { late: {} }, 12_000));
    expect(drained.remove).toEqual([]);
    expect(consumableShards(drained.record, 'late')).toEqual([2, 3, 4]);
    expect(applyObservation(drained.record, observation([], { late: {} }, 13_000)).remove).toEqual([
      0,
    ]);
  });

  it('a group found only on a shard already gone, or already tracked, is not tracked again', () => {
    const r = draining(base(2), 3, ['a']);
    const step = applyObservation(r, {
      ...observation([], { a: {} }),
      found: new Map([['a', [0]]]),
    });
    expect(step.record).toBe(r);
  });
});

describe('a tracked group deleted and re-created during the change', () => {
  it('is tracked again (strict) while its consumer group still has backlog on an old shard', () => {
    // DELETE /v1/groups keeps the Redis consumer groups, so a group re-created under the same id
    // resumes them: the old shards it had not drained must not be deleted under it.
    const r = draining(base(2), 3, ['a', 'g']);
    const gone = applyObservation(
      r,
      observation(
        [
          [0, 'a'],
          [1, 'a'],
        ],
        { a: {}, g: { status: 'deleted' } },
      ),
    ).record;
    expect(gone.resharding?.abandoned.g?.reason).toBe('deleted');
    const back = applyObservation(gone, {
      ...observation([[1, 'g']], { a: {}, g: {} }, 11_000),
      found: new Map([['g', [0]]]),
    });
    expect(back.remove).not.toContain(0);
    expect(back.events.find((e) => e.type === 'RESHARD_GROUP_TRACKED')?.data).toEqual({
      stream: 'orders',
      group: 'g',
      shards: [0],
      recreated: true,
    });
    const rs = back.record.resharding;
    expect(rs?.abandoned.g).toBeUndefined();
    expect(rs?.groups).toEqual(['a', 'g']);
    expect(rs?.strict).toEqual(['g']);
    // Old shard 0 first; new shard 4 (parent 1, drained) at once; 2 and 3 wait for 0.
    expect(consumableShards(back.record, 'g')).toEqual([0, 4]);
    const drained = applyObservation(
      back.record,
      observation([[0, 'g']], { a: {}, g: {} }, 12_000),
    );
    expect(
      applyObservation(drained.record, observation([], { a: {}, g: {} }, 13_000)).remove,
    ).toEqual([0]);
  });
});

describe('idle groups read in strict order whatever the mode', () => {
  it('a group idle when the layout is published waits for its parents in a relaxed change', () => {
    const begun = beginReshard(base(2), { shards: 3, mode: 'relaxed' }, 1024, 0);
    if (begun.kind !== 'started') throw new Error('not started');
    const r = markClosed(
      publishLayout(begun.record, ['busy', 'sleepy'], 1, ['sleepy']).record,
      2,
    ).record;
    expect(r.resharding?.strict).toEqual(['sleepy']);
    expect(consumableShards(r, 'busy')).toEqual([0, 1, 2, 3, 4]);
    expect(consumableShards(r, 'sleepy')).toEqual([0, 1]);
  });
});

describe('relaxed mode', () => {
  it('new shards are consumable at once; the status says key order is not guaranteed', () => {
    const r = draining(base(2), 3, ['a'], 'relaxed');
    expect(consumableShards(r, 'a')).toEqual([0, 1, 2, 3, 4]);
    expect(reshardingStatus(r, key)?.keyOrder).toBe('not-guaranteed');
    expect(reshardingStatus(draining(base(2), 3, ['a']), key)?.keyOrder).toBe('kept');
  });
});

describe('event-log mirroring', () => {
  it('each group gets the change-wide steps and its own, after its cursor; steps every group has are pruned', () => {
    let r = observeAll(draining(base(2), 3, ['a', 'b']), [
      observation([[0, 'a']], { a: {}, b: {} }),
    ]);
    const types = (g: string) => pendingGroupEvents(r, g).map((e) => e.type);
    expect(types('a')).toEqual([
      'RESHARD_REQUESTED',
      'RESHARD_STARTED',
      'RESHARD_SHARDS_CLOSED',
      'RESHARD_SHARD_DRAINED',
    ]);
    expect(types('b')).toEqual(['RESHARD_REQUESTED', 'RESHARD_STARTED', 'RESHARD_SHARDS_CLOSED']);
    expect(pendingGroupEvents(r, 'stranger')).toEqual([]);
    r = withMirrored(r, new Map([['a', 3]]));
    expect(types('a')).toEqual(['RESHARD_SHARD_DRAINED']);
    expect(r.resharding?.log.length).toBe(4);
    r = withMirrored(r, new Map([['b', 4]]));
    expect(r.resharding?.log.map((e) => e.step)).toEqual([4]);
    // Cursors never move back, never past the last step, and unknown groups are ignored.
    expect(
      withMirrored(
        r,
        new Map([
          ['a', 1],
          ['zzz', 9],
        ]),
      ),
    ).toBe(r);
    expect(withMirrored(r, new Map([['a', 50]])).resharding?.mirrored.a).toBe(4);
  });
});

describe('reshardingStatus', () => {
  it('shows state, groups and per-old-shard progress with keys', () => {
    const r = observeAll(draining(base(2), 3, ['a']), [
      observation([[0, 'a']], { a: {} }),
      observation([], { a: {} }),
    ]);
    const s = reshardingStatus(r, key);
    expect(s).toMatchObject({
      state: 'draining',
      mode: 'strict',
      fromShards: [0, 1],
      toShards: [2, 3, 4],
      groups: ['a'],
    });
    expect(s?.startedAt).toBe(new Date(1000).toISOString());
    expect(s?.drain).toEqual([
      {
        shard: 0,
        key: key(0),
        closed: true,
        drainedGroups: ['a'],
        releasedGroups: ['a'],
        pendingGroups: [],
        removed: true,
      },
      {
        shard: 1,
        key: key(1),
        closed: true,
        drainedGroups: [],
        releasedGroups: [],
        pendingGroups: ['a'],
        removed: false,
      },
    ]);
    expect(reshardingStatus(published(base(2), 3, ['a']), key)?.drain[0]?.closed).toBe(false);
  });
});
