import { describe, expect, it } from 'vitest';
import {
  as,
  eventData,
  eventTypes,
  hb,
  left,
  memberOf,
  ownersOf,
  refusedWith,
  restart,
  settle,
  shardsOf,
  stateOf,
  w,
} from '../../../../test/support/core-spec-helpers.js';
import { GroupSimulator, StaticCatalog } from '../../../../test/support/group-simulator.js';
import { GroupState } from './group-state.js';
import { GroupTransaction } from './group-transaction.js';
import { processHeartbeat } from './heartbeat.js';

/** m1 {0,2,4} and m2 {1,3,5} on orders, STABLE at epoch 2. */
function twoStable(): GroupSimulator {
  const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
  sim.heartbeat(GroupSimulator.join('m1', ['orders']));
  sim.heartbeat(GroupSimulator.join('m2', ['orders']));
  settle(sim);
  expect(sim.group.meta).toMatchObject({ groupEpoch: 2, assignmentEpoch: 2 });
  return sim;
}

describe('leave (-1)', () => {
  it('21. removes the member at once: epoch bump, shards free, new target, others nudged', () => {
    const sim = twoStable();
    const sent = sim.heartbeat({ memberId: 'm2', memberEpoch: -1 });
    expect(left(sent)).toEqual({ memberId: 'm2', memberEpoch: -1 });
    expect(sim.group.members.has('m2')).toBe(false);
    expect(sim.group.targets.has('m2')).toBe(false);
    expect(sim.group.meta).toMatchObject({ groupEpoch: 3, assignmentEpoch: 3 });
    expect(ownersOf(sim)).toEqual({ 'orders/0': 'm1', 'orders/2': 'm1', 'orders/4': 'm1' });
    expect(sim.group.targets.get('m1')).toEqual(as({ orders: [0, 1, 2, 3, 4, 5] }));
    expect([...sent.txn.nudges]).toEqual(['m1']);
    expect(eventTypes(sent.txn)).toEqual([
      'MEMBER_LEFT',
      'GROUP_EPOCH_BUMPED',
      'TARGET_ASSIGNMENT_CHANGED',
    ]);
    expect(eventData(sent.txn, 'MEMBER_LEFT')).toEqual({
      memberId: 'm2',
      instanceId: null,
      reason: 'leave',
      memberEpoch: 2,
      released: w({ orders: [1, 3, 5] }),
      pendingRevocation: [],
    });
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 3, reason: 'leave' });
    const res = hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }));
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1, 2, 3, 4, 5] }));
    expect(res.diff.added).toEqual(w({ orders: [1, 3, 5] }));
    expect(stateOf(sim)).toBe('STABLE');
  });

  it('the ownership changes of a leave (read before commit, for the data-plane fence) name every freed shard', () => {
    const sim = twoStable();
    const txn = new GroupTransaction(sim.group, sim.now);
    processHeartbeat(
      txn,
      true,
      { memberId: 'm2', memberEpoch: -1 },
      { rules: sim.rules, catalog: sim.catalog, clientHost: null },
    );
    expect(txn.dirty).toBe(true);
    expect(txn.ownershipChanges()).toEqual(
      [1, 3, 5].map((shard) => ({ stream: 'orders', shard, from: 'm2', to: null })),
    );
    expect([...txn.touchedMembers()]).toEqual(['m2']);
    // Not committed: the committed state is untouched.
    expect(ownersOf(sim)['orders/1']).toBe('m2');
  });

  it('a leave while revoking frees the pending shards too; the waiting member gets them at once', () => {
    const sim = twoStable();
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }));
    expect(memberOf(sim, 'm1').pendingRevocation).toEqual(as({ orders: [2, 4] }));
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: -1 });
    expect(eventData(sent.txn, 'MEMBER_LEFT')).toMatchObject({
      released: w({ orders: [0] }),
      pendingRevocation: w({ orders: [2, 4] }),
    });
    expect(ownersOf(sim)).toEqual({ 'orders/1': 'm2', 'orders/3': 'm2', 'orders/5': 'm2' });
    expect(sim.group.meta).toMatchObject({ groupEpoch: 4, assignmentEpoch: 4 });
    settle(sim);
    expect(Object.keys(ownersOf(sim))).toHaveLength(6);
  });

  it('the last member leaving empties the group (no target computed), a new join starts over', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: -1 });
    expect(eventTypes(sent.txn)).toEqual(['MEMBER_LEFT', 'GROUP_EPOCH_BUMPED']);
    expect(sim.group.meta).toMatchObject({ groupEpoch: 2, assignmentEpoch: 1 });
    expect(stateOf(sim)).toBe('EMPTY');
    expect(sim.group.owners.size).toBe(0);
    const res = hb(sim.heartbeat(GroupSimulator.join('m9', ['orders'])));
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1] }));
  });

  it('a left member is unknown afterwards', () => {
    const sim = twoStable();
    sim.heartbeat({ memberId: 'm2', memberEpoch: -1 });
    expect(refusedWith(sim, { memberId: 'm2', memberEpoch: 2 })).toBe('UNKNOWN_MEMBER_ID');
    expect(refusedWith(sim, { memberId: 'm2', memberEpoch: -1 })).toBe('UNKNOWN_MEMBER_ID');
  });
});

describe('session expiry and rebalance timeout (removal by the timers)', () => {
  it('26. session expiry: member removed, epoch bumped, shards free, MEMBER_EXPIRED', () => {
    const sim = twoStable();
    const txn = sim.remove('m2', 'expiry');
    expect(eventTypes(txn)).toEqual([
      'MEMBER_EXPIRED',
      'GROUP_EPOCH_BUMPED',
      'TARGET_ASSIGNMENT_CHANGED',
    ]);
    expect(eventData(txn, 'MEMBER_EXPIRED')).toMatchObject({
      memberId: 'm2',
      reason: 'expiry',
      memberEpoch: 2,
    });
    expect(eventData(txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 3, reason: 'expiry' });
    expect(eventData(txn, 'TARGET_ASSIGNMENT_CHANGED')).toMatchObject({ reason: 'expiry' });
    expect(sim.group.members.has('m2')).toBe(false);
    expect(Object.values(ownersOf(sim))).toEqual(['m1', 'm1', 'm1']);
    expect([...txn.nudges]).toEqual(['m1']);
  });

  it('26. expiring a member that is already gone writes nothing', () => {
    const sim = twoStable();
    sim.remove('m2', 'expiry');
    const version = sim.version;
    const txn = sim.remove('m2', 'expiry');
    expect(txn.events).toEqual([]);
    expect(sim.version).toBe(version);
  });

  it('27. the rebalance timer starts on entering UNREVOKED, survives heartbeats that still own, stops on the ack', () => {
    const sim = twoStable();
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    const entered = sim.now;
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    expect(memberOf(sim, 'm1').revokeStartedAt).toBe(entered);
    sim.now += 4000;
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0, 2, 4] }) });
    sim.now += 4000;
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    expect(memberOf(sim, 'm1')).toMatchObject({
      state: 'UNREVOKED_SHARDS',
      revokeStartedAt: entered,
    });
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0] }) });
    expect(memberOf(sim, 'm1').revokeStartedAt).toBeNull();
  });

  it('28. rebalance timeout: the member is removed with what it was revoking; the waiting members get it', () => {
    const sim = twoStable();
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    sim.heartbeat({ memberId: 'm2', memberEpoch: 2, ownedShards: w({ orders: [1] }) });
    expect(memberOf(sim, 'm2').state).toBe('UNRELEASED_SHARDS');
    const txn = sim.remove('m1', 'rebalance-timeout');
    expect(eventData(txn, 'MEMBER_FENCED')).toMatchObject({
      memberId: 'm1',
      reason: 'rebalance-timeout',
      released: w({ orders: [0] }),
      pendingRevocation: w({ orders: [2, 4] }),
    });
    expect(eventData(txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 4, reason: 'fence' });
    expect(ownersOf(sim)).toEqual({ 'orders/1': 'm2' });
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 2 })).toBe('UNKNOWN_MEMBER_ID');
    settle(sim);
    expect(Object.keys(ownersOf(sim))).toHaveLength(6);
    expect(new Set(Object.values(ownersOf(sim)))).toEqual(new Set(['m2', 'm3']));
  });
});

describe('restart: the committed state rebuilt from its records (29, 30)', () => {
  it('rebuilds the owner, static and subscription indexes exactly', () => {
    const sim = twoStable();
    sim.heartbeat(GroupSimulator.join('m3', ['orders', 'payments'], { instanceId: 'pod-3' }));
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    const before = sim.group;
    restart(sim);
    expect(sim.group).not.toBe(before);
    expect(sim.group.owners).toEqual(before.owners);
    expect(sim.group.staticMembers).toEqual(before.staticMembers);
    expect(sim.group.subscriptionCounts).toEqual(before.subscriptionCounts);
    expect(sim.group.members).toEqual(before.members);
    expect(sim.group.targets).toEqual(before.targets);
    expect(sim.group.meta).toEqual(before.meta);
  });

  it('a reconciliation interrupted by a restart continues exactly as without it', () => {
    const steps = (sim: GroupSimulator, restartAt: number): unknown[] => {
      const out: unknown[] = [];
      const reqs = [
        () => sim.heartbeat(GroupSimulator.join('m3', ['orders'])),
        () => sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }),
        () => sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }),
        () => sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0] }) }),
        () => sim.heartbeat({ memberId: 'm3', memberEpoch: 3 }),
        () => sim.heartbeat({ memberId: 'm2', memberEpoch: 2, ownedShards: w({ orders: [1] }) }),
        () => sim.heartbeat({ memberId: 'm3', memberEpoch: 3 }),
        () => sim.heartbeat({ memberId: 'm1', memberEpoch: 3 }),
      ];
      reqs.forEach((send, i) => {
        if (i === restartAt) restart(sim);
        const sent = send();
        out.push(sent.outcome.response, eventTypes(sent.txn));
      });
      out.push(stateOf(sim), ownersOf(sim));
      return out;
    };
    const reference = steps(twoStable(), -1);
    for (let at = 0; at < 8; at++) expect(steps(twoStable(), at)).toEqual(reference);
    expect(reference.at(-2)).toBe('STABLE');
  });

  it('fromRecords refuses records that give one shard two owners', () => {
    const sim = twoStable();
    const m1 = memberOf(sim, 'm1');
    const m2 = { ...memberOf(sim, 'm2'), pendingRevocation: as({ orders: [0] }) };
    expect(() => GroupState.fromRecords('g', sim.group.meta, [m1, m2], [])).toThrow(
      /held by both m1 and m2/,
    );
  });
});
