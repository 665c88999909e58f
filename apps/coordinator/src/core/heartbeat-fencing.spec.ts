import { describe, expect, it } from 'vitest';
import type { MemberStateName } from '@redis-stream-coordinator/nestjs/protocol';
import {
  as,
  eventTypes,
  fullHeartbeat,
  hb,
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

/** m1 STABLE at epoch 3 (previous 2) owning orders 0–3; m2 and m3 on `payments`. */
function memberAtEpoch3(): GroupSimulator {
  const sim = new GroupSimulator(new StaticCatalog({ orders: 4, payments: 2 }));
  sim.heartbeat(GroupSimulator.join('m1', ['orders']));
  sim.heartbeat(GroupSimulator.join('m2', ['payments']));
  sim.heartbeat({ memberId: 'm1', memberEpoch: 1 });
  sim.heartbeat(GroupSimulator.join('m3', ['payments']));
  sim.heartbeat({ memberId: 'm1', memberEpoch: 2 });
  expect(memberOf(sim, 'm1')).toMatchObject({
    memberEpoch: 3,
    previousMemberEpoch: 2,
    state: 'STABLE',
  });
  return sim;
}

describe('heartbeat: epoch fencing (GMM testConsumerGroupMemberEpochValidation)', () => {
  it('17. future epoch → FENCED_MEMBER_EPOCH, nothing written', () => {
    const sim = memberAtEpoch3();
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 4 })).toBe('FENCED_MEMBER_EPOCH');
    expect(refusedWith(sim, fullHeartbeat('m1', 200, ['orders'], []))).toBe('FENCED_MEMBER_EPOCH');
  });

  it('17. stale epoch that is not the previous one → FENCED_MEMBER_EPOCH', () => {
    const sim = memberAtEpoch3();
    expect(
      refusedWith(sim, { memberId: 'm1', memberEpoch: 1, ownedShards: w({ orders: [0] }) }),
    ).toBe('FENCED_MEMBER_EPOCH');
  });

  it('17. previous epoch without ownedShards → FENCED_MEMBER_EPOCH', () => {
    const sim = memberAtEpoch3();
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 2 })).toBe('FENCED_MEMBER_EPOCH');
  });

  it('17. previous epoch with owned not a subset of the assignment → FENCED_MEMBER_EPOCH', () => {
    const sim = memberAtEpoch3();
    expect(
      refusedWith(sim, {
        memberId: 'm1',
        memberEpoch: 2,
        ownedShards: w({ orders: [0], payments: [0] }),
      }),
    ).toBe('FENCED_MEMBER_EPOCH');
  });

  it('17. previous epoch with owned ⊆ assignment (lost response) → accepted with the current epoch', () => {
    const sim = memberAtEpoch3();
    const version = sim.version;
    const res = hb(
      sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0, 1, 2, 3] }) }),
    );
    expect(res.memberEpoch).toBe(3);
    expect(sim.version).toBe(version);
    const full = hb(sim.heartbeat(fullHeartbeat('m1', 2, ['orders'], [])));
    expect(full.memberEpoch).toBe(3);
    expect(shardsOf(full)).toEqual(w({ orders: [0, 1, 2, 3] }));
  });

  it('a fenced member rejoins with epoch 0 and gets its state back (KAFKA-19233)', () => {
    const sim = memberAtEpoch3();
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 9 })).toBe('FENCED_MEMBER_EPOCH');
    const sent = sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const res = hb(sent);
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1, 2, 3] }));
    // The member dropped everything: on a (re)join every shard is "added" (docs/protocol.md §3.4).
    expect(res.diff.added).toEqual(w({ orders: [0, 1, 2, 3] }));
    expect(eventTypes(sent.txn)).toEqual(['MEMBER_REJOINED']);
    expect(sim.group.meta.groupEpoch).toBe(3);
  });

  it('16. unknown member id with epoch ≠ 0 → UNKNOWN_MEMBER_ID (heartbeat and both leaves)', () => {
    const sim = memberAtEpoch3();
    expect(refusedWith(sim, { memberId: 'ghost', memberEpoch: 3 })).toBe('UNKNOWN_MEMBER_ID');
    expect(refusedWith(sim, { memberId: 'ghost', memberEpoch: -1 })).toBe('UNKNOWN_MEMBER_ID');
    expect(refusedWith(sim, { memberId: 'ghost', memberEpoch: -2, instanceId: 'ghost-pod' })).toBe(
      'UNKNOWN_MEMBER_ID',
    );
  });

  it('a member removed by expiry gets UNKNOWN_MEMBER_ID afterwards (docs/protocol.md §4.6)', () => {
    const sim = memberAtEpoch3();
    sim.remove('m1', 'expiry');
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 3 })).toBe('UNKNOWN_MEMBER_ID');
  });

  it('a member stored in a state this version does not know is fenced until it rejoins owning nothing', () => {
    const sim = memberAtEpoch3();
    const m1 = memberOf(sim, 'm1');
    sim.group.members.set('m1', { ...m1, state: 'FUTURE_STATE' as MemberStateName });
    // The stored member is not reconciled at the current target, so the next target epoch applies.
    sim.heartbeat(GroupSimulator.join('m4', ['payments']));
    restart(sim);
    expect(refusedWith(sim, { memberId: 'm1', memberEpoch: 3 })).toBe('FENCED_MEMBER_EPOCH');
    expect(
      refusedWith(sim, { memberId: 'm1', memberEpoch: 3, ownedShards: w({ orders: [0] }) }),
    ).toBe('FENCED_MEMBER_EPOCH');
    const res = hb(sim.heartbeat(GroupSimulator.join('m1', ['orders'])));
    expect(res.memberEpoch).toBe(4);
    expect(memberOf(sim, 'm1').state).toBe('STABLE');
  });
});

describe('heartbeat: rejoin with epoch 0 keeps the member state (scenario 37, KAFKA-19233)', () => {
  /** m1 and m2 on orders 0–5, stable at 2; m3 joins (epoch 3): m1 and m2 must revoke. */
  function rebalancing(): GroupSimulator {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 6 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    settle(sim);
    sim.heartbeat(GroupSimulator.join('m3', ['orders']));
    return sim;
  }

  it('STABLE: same epoch, same shards, no bump', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 3 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const res = hb(sim.heartbeat(GroupSimulator.join('m1', ['orders'])));
    expect(res.memberEpoch).toBe(1);
    expect(shardsOf(res)).toEqual(w({ orders: [0, 1, 2] }));
    expect(sim.group.meta.groupEpoch).toBe(1);
    expect(memberOf(sim, 'm1').state).toBe('STABLE');
  });

  it('UNREVOKED: the empty owned list proves the revocation → the next epoch with the kept shards', () => {
    const sim = rebalancing();
    hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }));
    expect(memberOf(sim, 'm1')).toMatchObject({ state: 'UNREVOKED_SHARDS', memberEpoch: 2 });
    const res = hb(sim.heartbeat(GroupSimulator.join('m1', ['orders'])));
    // orders/3 (m1's target) is still pending at m2, so m1 is UNRELEASED at 3 with orders/0.
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [0] }));
    expect(res.diff).toEqual({
      added: w({ orders: [0] }),
      revoking: [],
      awaitingRelease: w({ orders: [3] }),
    });
    expect(memberOf(sim, 'm1')).toMatchObject({
      state: 'UNRELEASED_SHARDS',
      pendingRevocation: as({}),
    });
    // The released shards are free at once: m3 takes orders/2 on its next heartbeat.
    expect(shardsOf(hb(sim.heartbeat({ memberId: 'm3', memberEpoch: 3 })))).toEqual(
      w({ orders: [2] }),
    );
  });

  it('UNRELEASED: the full target once it is free, else what is free', () => {
    const sim = rebalancing();
    expect(memberOf(sim, 'm3').state).toBe('UNRELEASED_SHARDS');
    const waiting = hb(sim.heartbeat(GroupSimulator.join('m3', ['orders'])));
    expect(waiting.memberEpoch).toBe(3);
    expect(shardsOf(waiting)).toEqual([]);
    expect(waiting.diff.awaitingRelease).toEqual(w({ orders: [2, 5] }));
    hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 2 }));
    hb(sim.heartbeat({ memberId: 'm1', memberEpoch: 2, ownedShards: w({ orders: [0] }) }));
    hb(sim.heartbeat({ memberId: 'm2', memberEpoch: 2 }));
    hb(sim.heartbeat({ memberId: 'm2', memberEpoch: 2, ownedShards: w({ orders: [1] }) }));
    const res = hb(sim.heartbeat(GroupSimulator.join('m3', ['orders'])));
    expect(res.memberEpoch).toBe(3);
    expect(shardsOf(res)).toEqual(w({ orders: [2, 5] }));
    expect(memberOf(sim, 'm3').state).toBe('STABLE');
    expect(ownersOf(sim)['orders/5']).toBe('m3');
    expect(stateOf(sim)).toBe('RECONCILING');
  });
});
