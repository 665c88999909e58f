import { describe, expect, it } from 'vitest';
import type { HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import {
  as,
  eventData,
  eventTypes,
  fullHeartbeat,
  hb as heartbeatOf,
  memberOf,
  ownersOf,
  refusedWith,
  restart,
  settle,
  shardsOf,
  stateOf,
  w,
} from '../../../../test/support/core-spec-helpers.js';
import {
  GroupSimulator,
  roundRobinAssignor,
  StaticCatalog,
  testRules,
} from '../../../../test/support/group-simulator.js';
import type { ShardAssignor } from './assignors/shard-assignor.interface.js';
import { GroupTransaction } from './group-transaction.js';
import { processHeartbeat } from './heartbeat.js';

const hb = (r: { outcome: { response: unknown } }): HeartbeatResponse =>
  r.outcome.response as HeartbeatResponse;

describe('heartbeat: reconciliation process (Kafka testReconciliationProcess)', () => {
  it('walks revoke → release → assign with the member and group states of KIP-848', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
    const m1 = hb(sim.heartbeat(GroupSimulator.join('m1', ['orders'])));
    expect(m1.memberEpoch).toBe(1);
    expect(m1.assignment?.shards).toEqual([
      {
        stream: 'orders',
        shards: [0, 1, 2, 3, 4, 5],
        keys: [0, 1, 2, 3, 4, 5].map((s) => `rsc:{orders:${s}}`),
      },
    ]);
    const m2 = hb(sim.heartbeat(GroupSimulator.join('m2', ['orders'])));
    expect(m2.memberEpoch).toBe(2);
    expect(m2.assignment?.shards).toEqual([]);
    expect(m2.diff.awaitingRelease).toEqual([{ stream: 'orders', shards: [1, 3, 5] }]);
    expect(sim.group.members.get('m2')?.state).toBe('UNRELEASED_SHARDS');
    // m1 is told to revoke 1,3,5 and keeps epoch 1.
    const r1 = hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 1 }));
    expect(r1.memberEpoch).toBe(1);
    expect(r1.assignment?.shards[0]?.shards).toEqual([0, 2, 4]);
    expect(r1.diff.revoking).toEqual([{ stream: 'orders', shards: [1, 3, 5] }]);
    expect(sim.group.members.get('m1')?.state).toBe('UNREVOKED_SHARDS');
    // Still owning them: no change.
    const r1b = hb(
      sim.heartbeat({
        memberId: 'm1',
        memberEpoch: 1,
        ownedShards: [{ stream: 'orders', shards: [0, 1, 2, 3, 4, 5] }],
      }),
    );
    expect(r1b.memberEpoch).toBe(1);
    expect(sim.group.members.get('m1')?.state).toBe('UNREVOKED_SHARDS');
    // m2 still waits.
    const r2 = hb(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }));
    expect(r2.assignment).toBeUndefined();
    // m1 acknowledges.
    const r1c = hb(
      sim.heartbeat({
        memberId: 'm1',
        memberEpoch: 1,
        ownedShards: [{ stream: 'orders', shards: [0, 2, 4] }],
      }),
    );
    expect(r1c.memberEpoch).toBe(2);
    expect(sim.group.members.get('m1')?.state).toBe('STABLE');
    const r2b = hb(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }));
    expect(r2b.assignment?.shards[0]?.shards).toEqual([1, 3, 5]);
    expect(r2b.diff.added).toEqual([{ stream: 'orders', shards: [1, 3, 5] }]);
    expect(sim.group.members.get('m2')?.state).toBe('STABLE');
  });
});

const rr = testRules();
const other: ShardAssignor = { ...roundRobinAssignor, name: 'other' };

describe('heartbeat: joining (GMM)', () => {
  it('15. the first join creates the group at epoch 1 with the full assignment and the join records', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    expect(stateOf(sim)).toBe('EMPTY');
    const sent = sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const res = heartbeatOf(sent);
    expect(res).toEqual({
      memberId: 'm1',
      memberEpoch: 1,
      heartbeatIntervalMs: 3000,
      sessionTimeoutMs: 15000,
      assignment: {
        shards: [
          {
            stream: 'orders',
            shards: [0, 1, 2, 3],
            keys: [0, 1, 2, 3].map((s) => `rsc:{orders:${s}}`),
          },
        ],
      },
      diff: { added: w({ orders: [0, 1, 2, 3] }), revoking: [], awaitingRelease: [] },
    });
    expect(eventTypes(sent.txn)).toEqual([
      'MEMBER_JOINED',
      'GROUP_EPOCH_BUMPED',
      'TARGET_ASSIGNMENT_CHANGED',
      'SHARDS_ASSIGNED',
      'MEMBER_EPOCH_CHANGED',
    ]);
    expect(eventData(sent.txn, 'MEMBER_JOINED')).toEqual({
      memberId: 'm1',
      instanceId: null,
      replacedMemberId: null,
      subscribedStreams: ['orders'],
    });
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({ groupEpoch: 1, reason: 'join' });
    expect(eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED')).toMatchObject({
      assignmentEpoch: 1,
      assignor: 'round-robin',
      reason: 'join',
      members: 1,
      shards: 4,
      moved: 4,
      movesTruncated: false,
    });
    expect(eventData(sent.txn, 'SHARDS_ASSIGNED')).toEqual({
      memberId: 'm1',
      shards: w({ orders: [0, 1, 2, 3] }),
      memberEpoch: 1,
    });
    expect(eventData(sent.txn, 'MEMBER_EPOCH_CHANGED')).toEqual({
      memberId: 'm1',
      memberEpoch: 1,
      previousMemberEpoch: 0,
      state: 'STABLE',
    });
    expect(sim.group.meta).toMatchObject({ groupEpoch: 1, assignmentEpoch: 1, version: 1 });
    expect(memberOf(sim, 'm1')).toMatchObject({
      memberEpoch: 1,
      previousMemberEpoch: 0,
      state: 'STABLE',
      subscribedStreams: ['orders'],
      rebalanceTimeoutMs: 30000,
      clientHost: '127.0.0.1',
      assigned: as({ orders: [0, 1, 2, 3] }),
    });
    expect(sim.group.targets.get('m1')).toEqual(as({ orders: [0, 1, 2, 3] }));
    expect(stateOf(sim)).toBe('STABLE');
  });

  it('16a. epoch ≠ 0 on a group that does not exist → GROUP_ID_NOT_FOUND (leaves included), nothing written', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 5 })).toBe('GROUP_ID_NOT_FOUND');
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: -1 })).toBe('GROUP_ID_NOT_FOUND');
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: -2, instanceId: 'i' })).toBe(
      'GROUP_ID_NOT_FOUND',
    );
    expect(sim.exists).toBe(false);
  });

  it('16b. an emptied group still exists: an unknown member gets UNKNOWN_MEMBER_ID, not GROUP_ID_NOT_FOUND', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat({ memberId: 'm1', memberEpoch: -1 });
    expect(stateOf(sim)).toBe('EMPTY');
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 1 })).toBe('UNKNOWN_MEMBER_ID');
    expect(heartbeatOf(sim.heartbeat(GroupSimulator.join('m1', ['orders']))).memberEpoch).toBe(
      sim.group.meta.groupEpoch,
    );
  });

  it('14. an assignor that is not configured → UNSUPPORTED_ASSIGNOR, checked before the group (docs/protocol.md §2.4)', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    expect(refusedWith(sim, GroupSimulator.join('m1', ['orders'], { assignor: 'nope' }))).toBe(
      'UNSUPPORTED_ASSIGNOR',
    );
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 4, assignor: 'nope' })).toBe(
      'UNSUPPORTED_ASSIGNOR',
    );
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 1, assignor: 'nope' })).toBe(
      'UNSUPPORTED_ASSIGNOR',
    );
  });

  it('the group uses the assignor its members name; changing the preference alone does not bump', () => {
    const sim = new GroupSimulator(
      new StaticCatalog({ orders: 4 }),
      testRules([roundRobinAssignor, other]),
    );
    const join = sim.heartbeat(GroupSimulator.join('m1', ['orders'], { assignor: 'other' }));
    expect(eventData(join.txn, 'TARGET_ASSIGNMENT_CHANGED')).toMatchObject({ assignor: 'other' });
    const version = sim.version;
    const change = sim.heartbeat({ memberId: 'm1', memberEpoch: 1, assignor: 'round-robin' });
    expect(sim.version).toBe(version + 1);
    expect(memberOf(sim, 'm1').assignor).toBe('round-robin');
    expect(eventTypes(change.txn)).toEqual([]);
    expect(sim.group.meta.groupEpoch).toBe(1);
  });

  it('18. a subscription change bumps the group epoch and computes a new target', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2, payments: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const sent = sim.heartbeat({
      memberId: 'm1',
      memberEpoch: 1,
      subscribedStreams: ['payments', 'orders'],
    });
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({
      groupEpoch: 2,
      reason: 'subscription',
    });
    expect(eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED')).toMatchObject({
      assignmentEpoch: 2,
      reason: 'subscription',
    });
    const res = heartbeatOf(sent);
    expect(res.memberEpoch).toBe(2);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1], payments: [0, 1] }));
    expect(res.diff.added).toEqual(w({ payments: [0, 1] }));
    expect(memberOf(sim, 'm1').subscribedStreams).toEqual(['orders', 'payments']);
    // Dropping a stream revokes its shards first.
    const drop = heartbeatOf(
      sim.heartbeat({ memberId: 'm1', memberEpoch: 2, subscribedStreams: ['orders'] }),
    );
    expect(sim.group.meta.groupEpoch).toBe(3);
    expect(drop.memberEpoch).toBe(2);
    expect(shardsOf(drop)).toEqual(w({ orders: [0, 1] }));
    expect(drop.diff.revoking).toEqual(w({ payments: [0, 1] }));
    expect(memberOf(sim, 'm1').state).toBe('UNREVOKED_SHARDS');
  });

  it('metadata-only changes (rack, rebalance timeout) are persisted without a bump', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const sent = sim.heartbeat({
      memberId: 'm1',
      memberEpoch: 1,
      rackId: 'r1',
      rebalanceTimeoutMs: 5000,
    });
    expect(sent.txn.events).toEqual([]);
    expect(sim.version).toBe(2);
    expect(sim.group.meta.groupEpoch).toBe(1);
    expect(memberOf(sim, 'm1')).toMatchObject({ rackId: 'r1', rebalanceTimeoutMs: 5000 });
  });

  it('19. scale-out: a third member bumps the epoch, rewrites every target and waits UNRELEASED', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    settle(sim);
    expect(sim.group.meta).toMatchObject({ groupEpoch: 2, assignmentEpoch: 2 });
    const sent = sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    const res = heartbeatOf(sent);
    expect(sim.group.meta).toMatchObject({ groupEpoch: 3, assignmentEpoch: 3 });
    expect(Object.fromEntries(sim.group.targets)).toEqual({
      m1: as({ orders: [0, 3] }),
      m2: as({ orders: [1, 4] }),
      m3: as({ orders: [2, 5] }),
    });
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual([]);
    expect(res.diff).toEqual({ added: [], revoking: [], awaitingRelease: w({ orders: [2, 5] }) });
    expect(memberOf(sim, 'm3').state).toBe('UNRELEASED_SHARDS');
    expect([...sent.txn.nudges].sort()).toEqual(['m1', 'm2']);
    const target = eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED');
    expect(target).toMatchObject({
      assignmentEpoch: 3,
      reason: 'join',
      members: 3,
      shards: 6,
      moved: 4,
    });
    expect(target.moves).toEqual([
      { stream: 'orders', shard: 3, from: 'm2', to: 'm1' },
      { stream: 'orders', shard: 4, from: 'm1', to: 'm2' },
      { stream: 'orders', shard: 2, from: 'm1', to: 'm3' },
      { stream: 'orders', shard: 5, from: 'm2', to: 'm3' },
    ]);
    expect(stateOf(sim)).toBe('RECONCILING');
  });

  it('20. three members: revoke → release → assign, with member states, diffs and events after each step', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    settle(sim);
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    const st = (id: string): string => memberOf(sim, id).state;

    const m1 = sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    expect(heartbeatOf(m1)).toMatchObject({
      memberEpoch: 2,
      diff: { added: [], revoking: w({ orders: [2, 4] }), awaitingRelease: w({ orders: [3] }) },
    });
    expect(shardsOf(heartbeatOf(m1))).toEqual(w({ orders: [0] }));
    expect(eventTypes(m1.txn)).toEqual(['SHARDS_REVOKED', 'MEMBER_EPOCH_CHANGED']);
    expect(eventData(m1.txn, 'SHARDS_REVOKED')).toEqual({
      memberId: 'm1',
      shards: w({ orders: [2, 4] }),
      memberEpoch: 2,
    });
    expect(st('m1')).toBe('UNREVOKED_SHARDS');
    expect(memberOf(sim, 'm1').revokeStartedAt).toBe(sim.now);

    const m2 = heartbeatOf(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }));
    expect(m2).toMatchObject({
      memberEpoch: 2,
      diff: { revoking: w({ orders: [3, 5] }), awaitingRelease: w({ orders: [4] }) },
    });
    expect(st('m2')).toBe('UNREVOKED_SHARDS');
    expect(stateOf(sim)).toBe('RECONCILING');

    // m1 acknowledges; orders/3 is still pending at m2 → UNRELEASED at the new epoch.
    const ack1 = sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0] }) });
    expect(heartbeatOf(ack1)).toMatchObject({
      memberEpoch: 3,
      diff: { added: [], revoking: [], awaitingRelease: w({ orders: [3] }) },
    });
    expect(heartbeatOf(ack1).assignment).toBeUndefined();
    expect(eventTypes(ack1.txn)).toEqual(['SHARDS_RELEASED', 'MEMBER_EPOCH_CHANGED']);
    expect(eventData(ack1.txn, 'SHARDS_RELEASED')).toEqual({
      memberId: 'm1',
      shards: w({ orders: [2, 4] }),
    });
    expect(st('m1')).toBe('UNRELEASED_SHARDS');
    expect(memberOf(sim, 'm1').revokeStartedAt).toBeNull();

    // m3 picks up what m1 released.
    const m3 = heartbeatOf(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 }));
    expect(shardsOf(m3)).toEqual(w({ orders: [2] }));
    expect(m3.diff).toEqual({
      added: w({ orders: [2] }),
      revoking: [],
      awaitingRelease: w({ orders: [5] }),
    });
    expect(st('m3')).toBe('UNRELEASED_SHARDS');

    // m2 acknowledges and receives orders/4, freed by m1 in an earlier step.
    const ack2 = heartbeatOf(
      sim.heartbeat({ memberId: 'm2', memberEpoch: 2, ownedShards: w({ orders: [1] }) }),
    );
    expect(ack2.memberEpoch).toBe(3);
    expect(shardsOf(ack2)).toEqual(w({ orders: [1, 4] }));
    expect(ack2.diff.added).toEqual(w({ orders: [4] }));
    expect(st('m2')).toBe('STABLE');

    expect(shardsOf(heartbeatOf(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 })))).toEqual(
      w({ orders: [2, 5] }),
    );
    expect(st('m3')).toBe('STABLE');
    expect(stateOf(sim)).toBe('RECONCILING');
    expect(shardsOf(heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 3 })))).toEqual(
      w({ orders: [0, 3] }),
    );
    expect(stateOf(sim)).toBe('STABLE');
    expect(ownersOf(sim)).toEqual({
      'orders/0': 'm1',
      'orders/1': 'm2',
      'orders/2': 'm3',
      'orders/3': 'm1',
      'orders/4': 'm2',
      'orders/5': 'm3',
    });
  });

  it('22. a partial request gets no assignment unless it changed; a full request always gets it', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const partial = heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 1 }));
    expect('assignment' in partial).toBe(false);
    expect(partial.memberEpoch).toBe(1);
    const full = heartbeatOf(
      sim.heartbeat(fullHeartbeat('m1', 1, ['orders'], w({ orders: [0, 1] }))),
    );
    expect(shardsOf(full)).toEqual(w({ orders: [0, 1] }));
    expect(full.diff.added).toEqual([]);
    // A change (a stream grew) is sent to a partial request too.
    sim.catalog.set('orders', [0, 1, 2]);
    const grown = heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 1 }));
    expect(shardsOf(grown)).toEqual(w({ orders: [0, 1, 2] }));
    expect(grown.diff.added).toEqual(w({ orders: [2] }));
  });

  it('23. GROUP_MAX_SIZE_REACHED only for a new member', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }), { ...rr, groupMaxSize: 2 });
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    expect(refusedWith(sim, GroupSimulator.join('m3', ['orders']))).toBe('GROUP_MAX_SIZE_REACHED');
    // Existing members keep working: a rejoin and a heartbeat.
    expect(heartbeatOf(sim.heartbeat(GroupSimulator.join('m1', ['orders']))).memberEpoch).toBe(2);
    expect(heartbeatOf(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 })).memberEpoch).toBe(2);
    sim.heartbeat({ memberId: 'm2', memberEpoch: -1 });
    expect(heartbeatOf(sim.heartbeat(GroupSimulator.join('m3', ['orders']))).memberId).toBe('m3');
  });

  it('24. group states: EMPTY → ASSIGNING (replayed records) → RECONCILING → STABLE → EMPTY', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    expect(stateOf(sim)).toBe('EMPTY');
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    expect(stateOf(sim)).toBe('STABLE');
    // Records as persisted by a coordinator that bumped the epoch (a timer removal) without
    // computing the target yet: the group reads ASSIGNING until the next heartbeat computes it.
    sim.group.meta = { ...sim.group.meta, groupEpoch: 2 };
    restart(sim);
    expect(stateOf(sim)).toBe('ASSIGNING');
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    expect(sim.group.meta).toMatchObject({ groupEpoch: 3, assignmentEpoch: 3 });
    expect(stateOf(sim)).toBe('RECONCILING');
    settle(sim);
    expect(stateOf(sim)).toBe('STABLE');
    sim.remove('m1', 'expiry');
    sim.remove('m2', 'expiry');
    expect(stateOf(sim)).toBe('EMPTY');
  });

  it('38. the same full heartbeat twice: identical response, nothing written (STABLE, UNREVOKED, UNRELEASED)', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const stable = fullHeartbeat('m1', 1, ['orders'], w({ orders: [0, 1, 2, 3] }));
    const first = heartbeatOf(sim.heartbeat(stable));
    const version = sim.version;
    // Straight on the core, before any commit: the transaction has nothing to persist.
    const txn = new GroupTransaction(sim.group, sim.now);
    const outcome = processHeartbeat(txn, true, stable, {
      rules: sim.rules,
      catalog: sim.catalog,
      clientHost: '127.0.0.1',
    });
    expect(txn.dirty).toBe(false);
    expect(txn.ownershipChanges()).toEqual([]);
    expect(outcome.response).toEqual(first);
    const again = sim.heartbeat(stable);
    expect(heartbeatOf(again)).toEqual(first);
    expect(again.txn.events).toEqual([]);
    expect(sim.version).toBe(version);

    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    const unrevoked = fullHeartbeat('m1', 1, ['orders'], w({ orders: [0, 1, 2, 3] }));
    const u1 = heartbeatOf(sim.heartbeat(unrevoked));
    expect(memberOf(sim, 'm1').state).toBe('UNREVOKED_SHARDS');
    const v2 = sim.version;
    sim.now += 1000;
    expect(heartbeatOf(sim.heartbeat(unrevoked))).toEqual(u1);
    expect(sim.version).toBe(v2);

    const unreleased = fullHeartbeat('m2', 2, ['orders'], []);
    const r1 = heartbeatOf(sim.heartbeat(unreleased));
    expect(memberOf(sim, 'm2').state).toBe('UNRELEASED_SHARDS');
    const v3 = sim.version;
    expect(heartbeatOf(sim.heartbeat(unreleased))).toEqual(r1);
    expect(sim.version).toBe(v3);
  });
});

describe('heartbeat: streams and owned shards', () => {
  it('a stream created later bumps the epoch on the next heartbeat and its shards get assigned', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    const join = heartbeatOf(sim.heartbeat(GroupSimulator.join('m1', ['orders', 'later'])));
    expect(shardsOf(join)).toEqual(w({ orders: [0, 1] }));
    expect(heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 1 })).memberEpoch).toBe(1);
    sim.catalog.set('later', [0, 1, 2]);
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: 1 });
    expect(eventData(sent.txn, 'GROUP_EPOCH_BUMPED')).toEqual({
      groupEpoch: 2,
      reason: 'metadata',
    });
    const res = heartbeatOf(sent);
    expect(res.memberEpoch).toBe(2);
    expect(shardsOf(res)).toEqual(w({ later: [0, 1, 2], orders: [0, 1] }));
    expect(res.diff.added).toEqual(w({ later: [0, 1, 2] }));
    expect(res.assignment?.shards[0]?.keys).toEqual([
      'rsc:{later:0}',
      'rsc:{later:1}',
      'rsc:{later:2}',
    ]);
  });

  it('a stream change seen by any member bumps once; the others follow on their heartbeat', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    settle(sim);
    sim.catalog.set('orders', [0, 1, 2, 3]);
    heartbeatOf(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }));
    expect(sim.group.meta).toMatchObject({ groupEpoch: 3, assignmentEpoch: 3 });
    const m1 = sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
    expect(eventTypes(m1.txn)).not.toContain('GROUP_EPOCH_BUMPED');
    expect(sim.group.meta.groupEpoch).toBe(3);
    settle(sim);
    expect(ownersOf(sim)).toEqual({
      'orders/0': 'm1',
      'orders/1': 'm2',
      'orders/2': 'm1',
      'orders/3': 'm2',
    });
  });

  it('owned shards of unknown streams or ids are ignored (also in the lost-response check)', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 2 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const version = sim.version;
    const res = heartbeatOf(
      sim.heartbeat(fullHeartbeat('m1', 1, ['orders'], w({ orders: [0, 1, 7], ghost: [0] }))),
    );
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1] }));
    expect(sim.version).toBe(version);
    sim.heartbeat(GroupSimulator.join('m2', ['other-stream']));
    expect(heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 1 })).memberEpoch).toBe(2);
    // Previous epoch 1, owned ⊆ assigned once the unknown entries are dropped.
    const lost = heartbeatOf(
      sim.heartbeat({
        memberId: 'm1',
        memberEpoch: 1,
        ownedShards: w({ orders: [1, 9], ghost: [3] }),
      }),
    );
    expect(lost.memberEpoch).toBe(2);
    // An unknown shard does not keep a revocation pending.
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    heartbeatOf(sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }));
    expect(memberOf(sim, 'm1')).toMatchObject({
      state: 'UNREVOKED_SHARDS',
      pendingRevocation: as({ orders: [1] }),
    });
    const ack = heartbeatOf(
      sim.heartbeat({
        memberId: 'm1',
        memberEpoch: 2,
        ownedShards: w({ orders: [0, 5], ghost: [1] }),
      }),
    );
    expect(ack.memberEpoch).toBe(3);
    expect(memberOf(sim, 'm1').state).toBe('STABLE');
  });

  it('a shrinking stream releases the removed shards and the member keeps the rest', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.catalog.set('orders', [0, 1]);
    const res = heartbeatOf(
      sim.heartbeat(fullHeartbeat('m1', 1, ['orders'], w({ orders: [0, 1, 2, 3] }))),
    );
    expect(res.memberEpoch).toBe(2);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1] }));
    expect(ownersOf(sim)).toEqual({ 'orders/0': 'm1', 'orders/1': 'm1' });
    expect(memberOf(sim, 'm1').state).toBe('STABLE');
  });
});
