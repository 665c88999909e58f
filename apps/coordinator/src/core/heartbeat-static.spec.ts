import { describe, expect, it } from 'vitest';
import {
  as,
  eventData,
  eventTypes,
  fullHeartbeat,
  hb,
  left,
  memberOf,
  ownersOf,
  refusedWith,
  settle,
  shardsOf,
  stateOf,
  w,
} from '../../../../test/support/core-spec-helpers.js';
import {
  GroupSimulator,
  StaticCatalog,
  testRules,
} from '../../../../test/support/group-simulator.js';

/** Static m1 (pod-1) {0,2,4} and dynamic m2 {1,3,5} on orders, STABLE at epoch 2. */
function staticGroup(rules = testRules()): GroupSimulator {
  const sim = new GroupSimulator(new StaticCatalog({ orders: 6, payments: 2 }), rules);
  sim.heartbeat(GroupSimulator.join('m1', ['orders'], { instanceId: 'pod-1' }));
  sim.heartbeat(GroupSimulator.join('m2', ['orders']));
  settle(sim);
  expect(memberOf(sim, 'm1')).toMatchObject({
    memberEpoch: 2,
    assigned: as({ orders: [0, 2, 4] }),
  });
  return sim;
}

describe('static membership: temporary leave (-2)', () => {
  it('31. keeps the assignment reserved, no epoch bump, one member write, response -2', () => {
    const sim = staticGroup();
    const version = sim.version;
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    expect(left(sent)).toEqual({ memberId: 'm1', memberEpoch: -2 });
    expect(sim.version).toBe(version + 1);
    expect(eventTypes(sent.txn)).toEqual(['MEMBER_LEFT_TEMPORARILY']);
    expect(eventData(sent.txn, 'MEMBER_LEFT_TEMPORARILY')).toEqual({
      memberId: 'm1',
      instanceId: 'pod-1',
      reserved: w({ orders: [0, 2, 4] }),
      released: [],
    });
    expect(sim.group.meta).toMatchObject({ groupEpoch: 2, assignmentEpoch: 2 });
    expect(memberOf(sim, 'm1')).toMatchObject({
      memberEpoch: -2,
      previousMemberEpoch: 2,
      assigned: as({ orders: [0, 2, 4] }),
    });
    expect(ownersOf(sim)['orders/0']).toBe('m1');
    expect(sim.group.targets.get('m1')).toEqual(as({ orders: [0, 2, 4] }));
    // A member at -2 is not reconciled (docs/protocol.md §6.4).
    expect(stateOf(sim)).toBe('RECONCILING');
  });

  it('31. a -2 while revoking releases the pending shards only', () => {
    const sim = staticGroup();
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    expect(memberOf(sim, 'm1').pendingRevocation).toEqual(as({ orders: [2, 4] }));
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    expect(eventData(sent.txn, 'MEMBER_LEFT_TEMPORARILY')).toMatchObject({
      reserved: w({ orders: [0] }),
      released: w({ orders: [2, 4] }),
    });
    expect(ownersOf(sim)).toMatchObject({ 'orders/0': 'm1' });
    expect(ownersOf(sim)['orders/2']).toBeUndefined();
    expect(shardsOf(hb(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 })))).toEqual(
      w({ orders: [2] }),
    );
  });

  it('a repeated -2 (a retried leave) writes nothing', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    const record = memberOf(sim, 'm1');
    const version = sim.version;
    const again = sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    expect(left(again)).toEqual({ memberId: 'm1', memberEpoch: -2 });
    expect(again.txn.events).toEqual([]);
    expect(sim.version).toBe(version);
    expect(memberOf(sim, 'm1')).toBe(record);
    expect(record.previousMemberEpoch).toBe(2);
  });

  it('a member at -2 is fenced on any epoch > 0 (it must rejoin with 0)', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    expect(
      refusedWith(sim, { memberId: 'm1', memberEpoch: 2, instanceId: 'pod-1', ownedShards: [] }),
    ).toBe('FENCED_MEMBER_EPOCH');
  });

  it('36. -2 and no rejoin: removed at session expiry, epoch bumped, shards free', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    const txn = sim.remove('m1', 'expiry');
    expect(eventData(txn, 'MEMBER_EXPIRED')).toMatchObject({
      memberId: 'm1',
      instanceId: 'pod-1',
      memberEpoch: -2,
    });
    expect(sim.group.meta.groupEpoch).toBe(3);
    expect(sim.group.staticMembers.has('pod-1')).toBe(false);
    settle(sim);
    expect(new Set(Object.values(ownersOf(sim)))).toEqual(new Set(['m2']));
  });
});

describe('static membership: rejoin and replacement', () => {
  it('32. a rejoin under a new member id takes over at once: same shards, current epoch, no bump', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    const sent = sim.heartbeat(GroupSimulator.join('m1-new', ['orders'], { instanceId: 'pod-1' }));
    const res = hb(sent);
    expect(res.memberEpoch).toBe(2);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 2, 4] }));
    expect(res.diff).toEqual({
      added: w({ orders: [0, 2, 4] }),
      revoking: [],
      awaitingRelease: [],
    });
    expect(sim.group.meta).toMatchObject({ groupEpoch: 2, assignmentEpoch: 2 });
    expect(eventTypes(sent.txn)).not.toContain('GROUP_EPOCH_BUMPED');
    expect(eventData(sent.txn, 'MEMBER_REPLACED')).toEqual({
      memberId: 'm1-new',
      instanceId: 'pod-1',
      replacedMemberId: 'm1',
      subscribedStreams: ['orders'],
    });
    expect(sim.group.members.has('m1')).toBe(false);
    expect(sim.group.targets.has('m1')).toBe(false);
    expect(sim.group.targets.get('m1-new')).toEqual(as({ orders: [0, 2, 4] }));
    expect(sim.group.staticMembers.get('pod-1')).toBe('m1-new');
    expect(ownersOf(sim)).toMatchObject({
      'orders/0': 'm1-new',
      'orders/2': 'm1-new',
      'orders/4': 'm1-new',
    });
    expect(memberOf(sim, 'm1-new')).toMatchObject({ memberEpoch: 2, state: 'STABLE' });
    expect(stateOf(sim)).toBe('STABLE');
    // The old id is gone: with the instance id it is fenced, without it unknown.
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 2, instanceId: 'pod-1' })).toBe(
      'FENCED_INSTANCE_ID',
    );
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 2 })).toBe('UNKNOWN_MEMBER_ID');
  });

  it('32. rejoining under the same member id after -2 works too', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    const res = hb(sim.heartbeat(GroupSimulator.join('m1', ['orders'], { instanceId: 'pod-1' })));
    expect(res.memberEpoch).toBe(2);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 2, 4] }));
    expect(sim.group.meta.groupEpoch).toBe(2);
  });

  it('the group moved while the member was away: reserved shards wait for it, the rejoin frees what moved', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    // Targets: m1 {0,3}, m2 {1,4}, m3 {2,5}; m1's reserved 2 and 4 are not handed out.
    expect(hb(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 })).diff.awaitingRelease).toEqual(
      w({ orders: [2, 5] }),
    );
    expect(ownersOf(sim)['orders/2']).toBe('m1');
    const res = hb(
      sim.heartbeat(GroupSimulator.join('pod-1-b', ['orders'], { instanceId: 'pod-1' })),
    );
    // A new process owns nothing: the shards that moved are released at once.
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [0] }));
    expect(res.diff.awaitingRelease).toEqual(w({ orders: [3] }));
    expect(ownersOf(sim)['orders/2']).toBeUndefined();
    expect(shardsOf(hb(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 })))).toEqual(
      w({ orders: [2] }),
    );
    settle(sim);
    expect(Object.keys(ownersOf(sim))).toHaveLength(6);
  });

  it('33. a rejoin with a different subscription bumps the epoch', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    const sent = sim.heartbeat(
      GroupSimulator.join('m1-new', ['orders', 'payments'], { instanceId: 'pod-1' }),
    );
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 3, reason: 'join' });
    const res = hb(sent);
    expect(res.memberEpoch).toBe(3);
    expect(sim.group.targets.get('m1-new')?.get('payments')).toEqual([0, 1]);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 2, 4], payments: [0, 1] }));
  });

  it('33. a new static member (new instance id) bumps like any join', () => {
    const sim = staticGroup();
    const sent = sim.heartbeat(GroupSimulator.join('m3', ['orders'], { instanceId: 'pod-3' }));
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 3, reason: 'join' });
    expect(eventData(sent.txn, 'MEMBER_JOINED')).toMatchObject({
      memberId: 'm3',
      instanceId: 'pod-3',
    });
  });

  it('34. a static -1 removes the member for good and bumps; the instance id is free again', () => {
    const sim = staticGroup();
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: -1, instanceId: 'pod-1' });
    expect(left(sent)).toEqual({ memberId: 'm1', memberEpoch: -1 });
    expect(eventData(sent.txn, 'MEMBER_LEFT')).toMatchObject({
      memberId: 'm1',
      instanceId: 'pod-1',
    });
    expect(sim.group.meta.groupEpoch).toBe(3);
    expect(sim.group.staticMembers.has('pod-1')).toBe(false);
    const again = sim.heartbeat(GroupSimulator.join('m1-new', ['orders'], { instanceId: 'pod-1' }));
    expect(eventTypes(again.txn)).toContain('MEMBER_JOINED');
    expect(sim.group.meta.groupEpoch).toBe(4);
  });

  it('a -1 from a member at -2 removes it', () => {
    const sim = staticGroup();
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    sim.heartbeat({ memberId: 'm1', memberEpoch: -1, instanceId: 'pod-1' });
    expect(sim.group.members.has('m1')).toBe(false);
    expect(sim.group.meta.groupEpoch).toBe(3);
  });

  it('a dynamic member rejoining with a reserved instance id takes it over; its own target is handed out again', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
    sim.heartbeat(GroupSimulator.join('s1', ['orders'], { instanceId: 'pod-1' }));
    sim.heartbeat(GroupSimulator.join('d1', ['orders']));
    sim.heartbeat(GroupSimulator.join('d2', ['orders']));
    settle(sim);
    sim.heartbeat({ memberId: 's1', memberEpoch: -2, instanceId: 'pod-1' });
    const epoch = sim.group.meta.groupEpoch;
    const res = hb(sim.heartbeat(GroupSimulator.join('d1', ['orders'], { instanceId: 'pod-1' })));
    // d1's old record is gone (it rejoined owning nothing) and the membership changed: bump.
    expect(sim.group.meta.groupEpoch).toBe(epoch + 1);
    expect(res.memberEpoch).toBe(epoch + 1);
    expect([...sim.group.members.keys()].sort()).toEqual(['d1', 'd2']);
    expect(sim.group.staticMembers.get('pod-1')).toBe('d1');
    settle(sim);
    expect(Object.keys(ownersOf(sim)).sort()).toEqual([0, 1, 2, 3, 4, 5].map((s) => `orders/${s}`));
  });

  it('a full group still lets a static member replace its -2 record', () => {
    const sim = staticGroup({ ...testRules(), groupMaxSize: 2 });
    sim.heartbeat({ memberId: 'm1', memberEpoch: -2, instanceId: 'pod-1' });
    expect(refusedWith(sim, GroupSimulator.join('m3', ['orders']))).toBe('GROUP_MAX_SIZE_REACHED');
    expect(
      hb(sim.heartbeat(GroupSimulator.join('m1-new', ['orders'], { instanceId: 'pod-1' })))
        .memberEpoch,
    ).toBe(2);
  });
});

describe('static membership: errors (35)', () => {
  it('UNRELEASED_INSTANCE_ID: the instance id is held by a live member', () => {
    const sim = staticGroup();
    expect(
      refusedWith(sim, GroupSimulator.join('m1-new', ['orders'], { instanceId: 'pod-1' })),
    ).toBe('UNRELEASED_INSTANCE_ID');
  });

  it('UNKNOWN_MEMBER_ID: epoch ≠ 0 with an instance id nobody holds', () => {
    const sim = staticGroup();
    expect(refusedWith(sim, { memberId: 'm9', memberEpoch: 2, instanceId: 'pod-9' })).toBe(
      'UNKNOWN_MEMBER_ID',
    );
    expect(refusedWith(sim, { memberId: 'm9', memberEpoch: -2, instanceId: 'pod-9' })).toBe(
      'UNKNOWN_MEMBER_ID',
    );
  });

  it('FENCED_INSTANCE_ID: the instance id belongs to another member id (heartbeat and leaves)', () => {
    const sim = staticGroup();
    expect(refusedWith(sim, { memberId: 'm2', memberEpoch: 2, instanceId: 'pod-1' })).toBe(
      'FENCED_INSTANCE_ID',
    );
    expect(refusedWith(sim, { memberId: 'm2', memberEpoch: -1, instanceId: 'pod-1' })).toBe(
      'FENCED_INSTANCE_ID',
    );
    expect(refusedWith(sim, { memberId: 'm2', memberEpoch: -2, instanceId: 'pod-1' })).toBe(
      'FENCED_INSTANCE_ID',
    );
  });

  it('FENCED_INSTANCE_ID: a static member rejoining under another instance id', () => {
    const sim = staticGroup();
    expect(refusedWith(sim, fullHeartbeat('m1', 0, ['orders'], [], { instanceId: 'pod-x' }))).toBe(
      'FENCED_INSTANCE_ID',
    );
  });
});
