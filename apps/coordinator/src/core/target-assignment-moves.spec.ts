import { describe, expect, it } from 'vitest';
import { eventData, settle } from '../../../../test/support/core-spec-helpers.js';
import { GroupSimulator, StaticCatalog } from '../../../../test/support/group-simulator.js';

type Move = { stream: string; shard: number; from: string | null; to: string | null };

function movesOf(data: Record<string, unknown>): Move[] {
  return [...(data.moves as Move[])].sort((a, b) => a.shard - b.shard);
}

/** m1 {0,2} and m2 {1,3} on orders (round robin), STABLE. */
function twoStable(): GroupSimulator {
  const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
  sim.heartbeat(GroupSimulator.join('m1', ['orders']));
  sim.heartbeat(GroupSimulator.join('m2', ['orders']));
  settle(sim);
  return sim;
}

describe('TARGET_ASSIGNMENT_CHANGED moves say which shards moved, from whom, to whom, and why', () => {
  it('join: shards move from the member that had them to the new one', () => {
    const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }));
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    const sent = sim.heartbeat(GroupSimulator.join('m2', ['orders']));
    const data = eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED');
    expect(data.reason).toBe('join');
    expect(movesOf(data)).toEqual([
      { stream: 'orders', shard: 1, from: 'm1', to: 'm2' },
      { stream: 'orders', shard: 3, from: 'm1', to: 'm2' },
    ]);
    expect(data.moved).toBe(2);
  });

  it('leave: the leaving member is named as the source of the shards it had', () => {
    const sim = twoStable();
    const sent = sim.heartbeat({ memberId: 'm2', memberEpoch: -1 });
    const data = eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED');
    expect(data.reason).toBe('leave');
    expect(movesOf(data)).toEqual([
      { stream: 'orders', shard: 1, from: 'm2', to: 'm1' },
      { stream: 'orders', shard: 3, from: 'm2', to: 'm1' },
    ]);
  });

  it('expiry and fence carry their own reason', () => {
    for (const [reason, bump] of [
      ['expiry', 'expiry'],
      ['rebalance-timeout', 'fence'],
      ['admin', 'admin'],
    ] as const) {
      const sim = twoStable();
      const txn = sim.remove('m1', reason);
      const data = eventData(txn, 'TARGET_ASSIGNMENT_CHANGED');
      expect(data.reason).toBe(bump);
      expect(movesOf(data).map((m) => [m.shard, m.from, m.to])).toEqual([
        [0, 'm1', 'm2'],
        [2, 'm1', 'm2'],
      ]);
    }
  });

  it('shards no target holds any more are listed with to: null', () => {
    const sim = twoStable();
    sim.catalog.set('orders', [0, 1]);
    // The next heartbeat sees the changed shard set (a metadata bump) and recomputes the target.
    const m1 = sim.group.members.get('m1');
    const sent = sim.heartbeat({ memberId: 'm1', memberEpoch: m1?.memberEpoch ?? 0 });
    const data = eventData(sent.txn, 'TARGET_ASSIGNMENT_CHANGED');
    expect(data.reason).toBe('metadata');
    const gone = movesOf(data).filter((m) => m.to === null);
    expect(gone).toEqual([
      { stream: 'orders', shard: 2, from: 'm1', to: null },
      { stream: 'orders', shard: 3, from: 'm2', to: null },
    ]);
  });
});
