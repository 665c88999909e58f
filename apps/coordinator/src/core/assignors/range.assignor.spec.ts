import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  anyGroupArb,
  memberIdsArb,
  shardIds,
  STREAM_NAMES,
} from '../../../../../test/support/assignor-arbitraries.js';
import {
  assignorInput,
  contractViolations,
  plain,
} from '../../../../../test/support/assignor-fixtures.js';
import { EMPTY_ASSIGNMENT } from '../assignment.js';
import { compareRangeOrder, RangeAssignor } from './range.assignor.js';
import type { AssignorInput, AssignorMember } from './shard-assignor.interface.js';

const rangeAssignor = new RangeAssignor();
const RUNS = { numRuns: Number(process.env.RUNS ?? 300) };

function assign(input: AssignorInput): Record<string, Record<string, number[]>> {
  const output = rangeAssignor.assign(input);
  expect(contractViolations(input, output)).toEqual([]);
  return plain(output);
}

describe('RangeAssignor (Kafka RangeAssignorTest, adapted)', () => {
  it('is named "range"', () => {
    expect(rangeAssignor.name).toBe('range');
  });

  it('two members, same subscriptions (testFirstAssignmentTwoConsumersTwoTopicsSameSubscriptions)', () => {
    expect(
      assign(
        assignorInput({ A: { subs: ['t1', 't3'] }, B: { subs: ['t1', 't3'] } }, { t1: 3, t3: 2 }),
      ),
    ).toEqual({ A: { t1: [0, 1], t3: [0] }, B: { t1: [2], t3: [1] } });
  });

  it('different subscriptions (testFirstAssignmentThreeConsumersThreeTopicsDifferentSubscriptions)', () => {
    const input = assignorInput(
      { A: { subs: ['t1', 't2'] }, B: { subs: ['t3'] }, C: { subs: ['t2', 't3'] } },
      { t1: 3, t2: 3, t3: 2 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 1, 2], t2: [0, 1] },
      B: { t3: [0] },
      C: { t2: [2], t3: [1] },
    });
  });

  it('more members than shards (testFirstAssignmentNumConsumersGreaterThanNumPartitions)', () => {
    const members = Object.fromEntries(['A', 'B', 'C'].map((id) => [id, { subs: ['t1', 't3'] }]));
    expect(assign(assignorInput(members, { t1: 3, t3: 2 }))).toEqual({
      A: { t1: [0], t3: [0] },
      B: { t1: [1], t3: [1] },
      C: { t1: [2] },
    });
  });

  it('ignores previous targets: one member added re-lays the ranges (not sticky)', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [0, 1, 2] } },
        B: { subs: ['t1'], prev: { t1: [3, 4, 5] } },
        C: { subs: ['t1'] },
      },
      { t1: 6 },
    );
    expect(assign(input)).toEqual({ A: { t1: [0, 1] }, B: { t1: [2, 3] }, C: { t1: [4, 5] } });
  });

  it('co-partitions streams with equal shard counts', () => {
    const members = Object.fromEntries(
      ['A', 'B', 'C'].map((id) => [id, { subs: ['orders', 'payments'] }]),
    );
    const out = assign(assignorInput(members, { orders: 8, payments: 8 }));
    for (const target of Object.values(out)) expect(target.orders).toEqual(target.payments);
    expect(out).toEqual({
      A: { orders: [0, 1, 2], payments: [0, 1, 2] },
      B: { orders: [3, 4, 5], payments: [3, 4, 5] },
      C: { orders: [6, 7], payments: [6, 7] },
    });
  });

  it('lays static members first by instance id, then dynamic members by member id (docs/protocol.md §5.1)', () => {
    const input = assignorInput(
      {
        a: { subs: ['t'] },
        b: { subs: ['t'], instanceId: 'zeta' },
        c: { subs: ['t'], instanceId: 'alpha' },
        d: { subs: ['t'] },
      },
      { t: 4 },
    );
    expect(assign(input)).toEqual({ c: { t: [0] }, b: { t: [1] }, a: { t: [2] }, d: { t: [3] } });
  });

  it("keeps a static member's range when it rejoins under a new member id", () => {
    const before = assign(
      assignorInput(
        { m1: { subs: ['t'], instanceId: 'i1' }, m2: { subs: ['t'], instanceId: 'i2' } },
        { t: 4 },
      ),
    );
    const after = assign(
      assignorInput(
        { m9: { subs: ['t'], instanceId: 'i1' }, m2: { subs: ['t'], instanceId: 'i2' } },
        { t: 4 },
      ),
    );
    expect(after.m9).toEqual(before.m1);
    expect(after.m2).toEqual(before.m2);
  });

  it('orders equal instance ids by member id', () => {
    const a: AssignorMember = {
      memberId: 'x',
      instanceId: 'same',
      rackId: null,
      subscribedStreams: [],
      previousTarget: EMPTY_ASSIGNMENT,
    };
    expect(compareRangeOrder(a, { ...a, memberId: 'y' })).toBeLessThan(0);
    expect(compareRangeOrder({ ...a, instanceId: null }, a)).toBeGreaterThan(0);
  });

  it('assigns sparse shard ids by position', () => {
    expect(
      assign(assignorInput({ A: { subs: ['t'] }, B: { subs: ['t'] } }, { t: [3, 8, 11] })),
    ).toEqual({ A: { t: [3, 8] }, B: { t: [11] } });
  });
});

describe('RangeAssignor properties', () => {
  it('satisfies the ShardAssignor contract on any group', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        expect(contractViolations(input, rangeAssignor.assign(input))).toEqual([]);
      }),
      RUNS,
    );
  });

  it('gives every subscriber of a stream a contiguous run, larger runs first, in layout order', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        const output = rangeAssignor.assign(input);
        const layout = [...input.members.values()].sort(compareRangeOrder);
        for (const [stream, shards] of input.streams) {
          const subs = layout.filter((m) => m.subscribedStreams.includes(stream));
          if (subs.length === 0) continue;
          const q = Math.floor(shards.length / subs.length);
          const r = shards.length % subs.length;
          const laidOut = subs.flatMap((m, k) => {
            const mine = output.get(m.memberId)?.get(stream) ?? [];
            expect(mine.length).toBe(q + (k < r ? 1 : 0));
            return mine;
          });
          expect(laidOut).toEqual(shards);
        }
      }),
      RUNS,
    );
  });

  it('co-partitions homogeneous groups whose streams have the same shard ids', () => {
    const coPartitioned = fc
      .tuple(shardIds, fc.integer({ min: 2, max: 5 }), memberIdsArb(30))
      .map(([ids, streamCount, members]) => {
        const names = STREAM_NAMES.slice(0, streamCount);
        return assignorInput(
          Object.fromEntries(members.map((id) => [id, { subs: names }])),
          Object.fromEntries(names.map((n) => [n, ids])),
        );
      });
    fc.assert(
      fc.property(coPartitioned, (input) => {
        for (const target of rangeAssignor.assign(input).values()) {
          expect(
            new Set([...target.values()].map((s) => JSON.stringify(s))).size,
          ).toBeLessThanOrEqual(1);
          if (target.size > 0) expect(target.size).toBe(input.streams.size);
        }
      }),
      RUNS,
    );
  });

  it('is deterministic and ignores previous targets', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        const without: AssignorInput = {
          members: new Map(
            [...input.members].map(([id, m]) => [id, { ...m, previousTarget: EMPTY_ASSIGNMENT }]),
          ),
          streams: new Map([...input.streams].reverse()),
        };
        expect(plain(rangeAssignor.assign(without))).toEqual(plain(rangeAssignor.assign(input)));
      }),
      RUNS,
    );
  });
});
