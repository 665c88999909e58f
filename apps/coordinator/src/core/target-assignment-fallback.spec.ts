import { describe, expect, it } from 'vitest';
import { eventData, eventTypes, settle } from '../../../../test/support/core-spec-helpers.js';
import {
  GroupSimulator,
  StaticCatalog,
  roundRobinAssignor,
  testRules,
} from '../../../../test/support/group-simulator.js';
import type { Assignment } from './assignment.js';
import type { ShardAssignor } from './assignors/shard-assignor.interface.js';

/** Gives every shard to the member with the greatest id (distinct from round robin). */
const lastTakesAll: ShardAssignor = {
  name: 'last-takes-all',
  assign({ members, streams }) {
    const out = new Map<string, Assignment>();
    const ids = [...members.keys()].sort();
    for (const id of ids) out.set(id, new Map());
    const last = ids.at(-1);
    if (last !== undefined)
      out.set(last, new Map([...streams].map(([s, shards]) => [s, [...shards]])));
    return out;
  },
};

/**
 * A group whose members named an assignor this replica does not have (it was removed from the
 * deployment, or a replica runs without it): recomputes use the default assignor and say so.
 */
describe('an assignor no replica knows any more', () => {
  /** m1 and m2 named last-takes-all on a replica that had it; now served by one that has not. */
  function orphaned(): GroupSimulator {
    const before = new GroupSimulator(
      new StaticCatalog({ orders: 4 }),
      testRules([roundRobinAssignor, lastTakesAll]),
    );
    for (const id of ['m1', 'm2'])
      before.heartbeat(GroupSimulator.join(id, ['orders'], { assignor: lastTakesAll.name }));
    settle(before);
    const after = new GroupSimulator(before.catalog, testRules([roundRobinAssignor]));
    after.group = before.group;
    after.exists = true;
    after.version = before.version;
    return after;
  }

  it('a join recomputes with the default assignor and records ASSIGNOR_FALLBACK', () => {
    const sim = orphaned();
    const sent = sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    expect(sent.outcome.kind).toBe('heartbeat');
    const fallback = eventData(sent.txn, 'ASSIGNOR_FALLBACK');
    expect(fallback).toEqual({
      assignmentEpoch: sim.group.meta.groupEpoch,
      requested: 'last-takes-all',
      used: 'round-robin',
      membersNaming: 2,
      members: ['m1', 'm2'],
    });
    const types = eventTypes(sent.txn);
    expect(types.indexOf('ASSIGNOR_FALLBACK')).toBe(types.indexOf('TARGET_ASSIGNMENT_CHANGED') - 1);
    expect(eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED').assignor).toBe('round-robin');
    settle(sim);
    const targets = [...sim.group.targets].sort(([a], [b]) => a.localeCompare(b));
    expect(targets.map(([id, t]) => [id, t.get('orders') ?? []])).toEqual([
      ['m1', [0, 3]],
      ['m2', [1]],
      ['m3', [2]],
    ]);
  });

  it('leaves and expiries remove the member instead of throwing', () => {
    const sim = orphaned();
    const m2 = sim.group.members.get('m2');
    const left = sim.heartbeat({ memberId: 'm2', memberEpoch: -1 });
    expect(left.outcome.kind).toBe('leave');
    expect(m2).toBeDefined();
    expect(sim.group.members.has('m2')).toBe(false);
    expect(eventData(left.txn, 'ASSIGNOR_FALLBACK').members).toEqual(['m1']);

    const expired = sim.remove('m1', 'expiry');
    expect(sim.group.members.size).toBe(0);
    // nobody left to assign to: no recompute, so no fallback either
    expect(eventTypes(expired)).not.toContain('ASSIGNOR_FALLBACK');
  });

  it('a group whose assignor is known records no fallback', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    const sent = sim.heartbeat(GroupSimulator.join('m1', ['orders'], { assignor: 'round-robin' }));
    expect(eventTypes(sent.txn)).not.toContain('ASSIGNOR_FALLBACK');
  });
});
