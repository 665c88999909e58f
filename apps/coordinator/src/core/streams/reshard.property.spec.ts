import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RoutingTable } from '@redis-stream-coordinator/nestjs/protocol';
import {
  applyObservation,
  beginReshard,
  finishReshard,
  fullyMirrored,
  type GroupObservation,
  markClosed,
  pendingGroupEvents,
  publishLayout,
  withMirrored,
} from './reshard-steps.js';
import {
  activeShardIds,
  consumableShards,
  hasShard,
  newStreamRecord,
  type ReshardRecord,
  type StreamRecord,
  readsStrict,
  waitedGroups,
} from './stream-record.js';

/**
 * Model-based properties of the reshard state machine. A random world (groups that drain old
 * shards, acquire and drop shards from their views, go idle, get deleted; event-log mirroring
 * that may lose cursor moves) is observed at random moments; after every step the record must
 * keep the reshard's promises:
 * - a group only ever sees a new shard once every parent is drained by it (strict), and never an
 *   old shard it drained; "drained" in the record is always true in the data plane;
 * - an old shard is removed only when every waited-for group has drained it (in an earlier,
 *   persisted step) and holds it no longer;
 * - progress is monotonic, ids are never reused, and a fair world always completes;
 * - every tracked group's event log gets every step about it (at least once, in order).
 */

type Cmd =
  | { t: 'drain'; shard: number; group: number }
  | { t: 'hold'; shard: number; group: number }
  | { t: 'drop'; shard: number; group: number }
  | { t: 'status'; group: number; status: 'active' | 'idle' | 'deleted' }
  | { t: 'observe'; dt: number }
  | { t: 'mirror'; group: number; lose: boolean };

const GROUPS = ['g0', 'g1', 'g2'];

const cmd: fc.Arbitrary<Cmd> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ t: fc.constant('drain' as const), shard: fc.nat(40), group: fc.nat(2) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('hold' as const), shard: fc.nat(80), group: fc.nat(2) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('drop' as const), shard: fc.nat(80), group: fc.nat(2) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('status' as const),
      group: fc.nat(2),
      status: fc.constantFrom(
        'active' as const,
        'active' as const,
        'idle' as const,
        'deleted' as const,
      ),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      t: fc.constant('observe' as const),
      dt: fc.integer({ min: 0, max: 800 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('mirror' as const),
      group: fc.nat(2),
      lose: fc.boolean(),
    }),
  },
);

interface World {
  record: StreamRecord;
  now: number;
  truth: Set<string>;
  holds: Map<string, Set<number>>;
  status: Map<string, 'active' | 'idle' | 'deleted'>;
  /** What each group's event log received, in order (steps). */
  logs: Map<string, number[]>;
  /** Every event of the change: step → the group it is about (`undefined`: change-wide). */
  events: Map<number, string | undefined>;
}

const pair = (shard: number, group: string): string => `${shard}/${group}`;
const res = (r: StreamRecord): ReshardRecord => r.resharding as ReshardRecord;
const IDLE_GRACE = 1000;

function observe(w: World): void {
  const before = w.record;
  const r = res(before);
  const drained = new Map<number, Set<string>>();
  for (const s of before.shards) {
    if (s.state !== 'draining') continue;
    drained.set(s.id, new Set(GROUPS.filter((g) => w.truth.has(pair(s.id, g)))));
  }
  const groups = new Map<string, GroupObservation>();
  for (const g of r.groups) {
    const oldHeld = new Set([...(w.holds.get(g) ?? [])].filter((id) => r.fromShards.includes(id)));
    groups.set(g, { status: w.status.get(g) ?? 'active', holds: oldHeld });
  }
  const out = applyObservation(before, { now: w.now, drained, groups, idleNoticeMs: IDLE_GRACE });
  const after = out.record;
  const ra = res(after);
  // Removal: every waited group drained it in the persisted record and holds it no longer.
  for (const s of out.remove) {
    for (const g of waitedGroups(ra)) {
      expect(r.drained[String(s)] ?? [], `removed ${s} before ${g} drained it`).toContain(g);
      expect(w.holds.get(g)?.has(s) ?? false, `removed ${s} while ${g} holds it`).toBe(false);
    }
    expect(hasShard(after, s)).toBe(false);
  }
  // Monotonic progress.
  for (const [k, list] of Object.entries(r.drained))
    for (const g of list) expect(ra.drained[k]).toContain(g);
  for (const [k, list] of Object.entries(r.released))
    for (const g of list) expect(ra.released[k]).toContain(g);
  for (const g of Object.keys(r.abandoned)) expect(ra.abandoned[g]).toBeDefined();
  // Only a deleted group is given up by the change itself (an idle one only by an admin).
  for (const [g, a] of Object.entries(ra.abandoned))
    if (!r.abandoned[g]) expect([g, a.reason]).toEqual([g, 'deleted']);
  for (const s of after.shards) expect(hasShard(before, s.id)).toBe(true);
  expect(ra.step).toBeGreaterThanOrEqual(r.step);
  expect(out.events.map((e) => e.step)).toEqual(out.events.map((_, i) => r.step + i + 1));
  for (const e of out.events) w.events.set(e.step, e.data.group as string | undefined);
  w.record = after;
}

function checkViews(w: World, mode: 'strict' | 'relaxed'): void {
  const r = w.record.resharding;
  if (!r) return;
  for (const [k, list] of Object.entries(r.drained)) {
    for (const g of list)
      expect(w.truth.has(pair(Number(k), g)), `${g} marked drained on ${k} without truth`).toBe(
        true,
      );
  }
  for (const g of [...GROUPS, 'late']) {
    const view = consumableShards(w.record, g);
    const waited = waitedGroups(r).includes(g);
    for (const id of view) {
      const s = w.record.shards.find((x) => x.id === id);
      expect(s, `view of ${g} lists unknown shard ${id}`).toBeDefined();
      if (!s) continue;
      if (s.state === 'draining') {
        expect(waited, `${g} not waited for but sees old ${id}`).toBe(true);
        expect(r.drained[String(id)] ?? []).not.toContain(g);
      } else if (waited && (mode === 'strict' || readsStrict(r, g))) {
        for (const p of s.parents) {
          const done = !hasShard(w.record, p) || (r.drained[String(p)] ?? []).includes(g);
          expect(done, `${g} sees ${id} before parent ${p} is drained`).toBe(true);
        }
      }
    }
  }
}

function mirror(w: World, group: string, lose: boolean): void {
  const r = w.record.resharding;
  if (!r || !r.groups.includes(group) || r.state === 'preparing') return;
  const pending = pendingGroupEvents(w.record, group);
  w.logs.set(group, [...(w.logs.get(group) ?? []), ...pending.map((e) => e.step)]);
  // A lost cursor move: the events reached the group log, the cursor was not persisted.
  if (!lose) w.record = withMirrored(w.record, new Map([[group, r.step]]));
}

function run(
  from: number,
  to: number,
  tracked: number,
  mode: 'strict' | 'relaxed',
  cmds: readonly Cmd[],
): void {
  const groups = GROUPS.slice(0, tracked);
  const initial = newStreamRecord('s', from, 0);
  const begun = beginReshard(initial, { shards: to, mode }, 4096, 0);
  if (begun.kind !== 'started') throw new Error('unreachable: from ≠ to');
  const fresh = res(begun.record).toShards;
  expect(fresh.every((id) => id >= initial.nextShardId)).toBe(true);
  const layout = publishLayout(begun.record, groups, 1);
  expect(new RoutingTable(layout.record.routing).shardFor('k')).toBeGreaterThanOrEqual(from);
  const closed = markClosed(layout.record, 2);
  const record = closed.record;
  const events = new Map<number, string | undefined>();
  for (const e of [...begun.events, ...layout.events, ...closed.events])
    events.set(e.step, undefined);
  const w: World = {
    record,
    now: 10,
    truth: new Set(),
    holds: new Map(),
    status: new Map(),
    logs: new Map(),
    events,
  };
  // Before any observation, tracked groups may hold old shards.
  for (const g of groups) w.holds.set(g, new Set(res(record).fromShards));

  for (const c of cmds) {
    if (!w.record.resharding || w.record.resharding.state !== 'draining') break;
    const g = GROUPS[c.t === 'observe' ? 0 : c.group] as string;
    const id = 'shard' in c ? c.shard : -1;
    switch (c.t) {
      case 'drain':
        // Only a group that holds nothing of it pending could be drained; the data plane decides.
        if (res(w.record).fromShards.includes(id)) w.truth.add(pair(id, g));
        break;
      case 'hold':
        if (
          (w.status.get(g) ?? 'active') === 'active' &&
          consumableShards(w.record, g).includes(id)
        ) {
          w.holds.set(g, new Set([...(w.holds.get(g) ?? []), id]));
        }
        break;
      case 'drop':
        w.holds.get(g)?.delete(id);
        break;
      case 'status':
        if (w.status.get(g) === 'deleted') break;
        w.status.set(g, c.status);
        if (c.status !== 'active') w.holds.set(g, new Set());
        break;
      case 'observe':
        w.now += c.dt;
        observe(w);
        break;
      case 'mirror':
        mirror(w, g, c.lose);
        break;
    }
    checkViews(w, mode);
  }

  // A fair world: every group drains everything and drops whatever left its view; time passes.
  for (let round = 0; round < 6 && w.record.resharding?.state === 'draining'; round++) {
    for (const s of res(w.record).fromShards) for (const g of GROUPS) w.truth.add(pair(s, g));
    for (const g of GROUPS) {
      const view = new Set(consumableShards(w.record, g));
      w.holds.set(g, new Set([...(w.holds.get(g) ?? [])].filter((id) => view.has(id))));
    }
    w.now += IDLE_GRACE;
    observe(w);
    checkViews(w, mode);
  }
  const r = res(w.record);
  expect(r.state).toBe('completing');
  for (const g of r.groups) mirror(w, g, false);
  expect(fullyMirrored(res(w.record))).toBe(true);
  const done = finishReshard(w.record);
  expect(activeShardIds(done)).toEqual(fresh);
  expect(done.shards.map((s) => s.id)).toEqual(fresh);
  for (const g of groups) expect(consumableShards(done, g)).toEqual(fresh);

  // Event logs: each group got every step about it, in order, at least once, nothing of others.
  expect([...w.events.keys()].sort((a, b) => a - b)).toEqual(
    Array.from({ length: r.step }, (_, i) => i + 1),
  );
  for (const g of groups) {
    const got = w.logs.get(g) ?? [];
    for (let i = 1; i < got.length; i++) {
      // Out of order only where a lost cursor move made steps repeat.
      if ((got[i] as number) <= (got[i - 1] as number)) expect(got.slice(0, i)).toContain(got[i]);
    }
    const expected = [...w.events]
      .filter(([, about]) => about === undefined || about === g)
      .map(([step]) => step);
    expect([...new Set(got)].sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
  }
}

describe('reshard state machine (model-based)', () => {
  it('keeps its promises in random worlds, strict and relaxed, growing and shrinking', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom('strict' as const, 'relaxed' as const),
        fc.array(cmd, { maxLength: 120 }),
        (from, to, tracked, mode, cmds) => {
          fc.pre(from !== to);
          run(from, to, tracked, mode, cmds);
        },
      ),
      { numRuns: 200 },
    );
  }, 120_000);

  it('ids are never reused across consecutive reshards', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 40 }),
        (counts, start) => {
          let record = newStreamRecord('s', start, 0);
          const ever = new Set(record.shards.map((s) => s.id));
          for (const n of counts) {
            const begun = beginReshard(record, { shards: n, mode: 'strict' }, 4096, 0);
            if (begun.kind === 'unchanged') continue;
            let r = markClosed(publishLayout(begun.record, [], 0).record, 0).record;
            r = applyObservation(r, {
              now: 1,
              drained: new Map(),
              groups: new Map(),
              idleNoticeMs: 0,
            }).record;
            record = finishReshard(r);
            for (const s of record.shards) {
              expect(ever.has(s.id)).toBe(false);
              ever.add(s.id);
            }
            expect(record.shards.length).toBe(n);
            expect(record.nextShardId).toBe(Math.max(...ever) + 1);
          }
        },
      ),
      { numRuns: 200 },
    );
  }, 60_000);
});
