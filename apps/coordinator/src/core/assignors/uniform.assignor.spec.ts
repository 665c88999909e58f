import { describe, expect, it } from 'vitest';
import {
  assignorInput,
  contractViolations,
  plain,
} from '../../../../../test/support/assignor-fixtures.js';
import { EMPTY_ASSIGNMENT } from '../assignment.js';
import { InvalidAssignorInputError } from './invalid-assignor-input.error.js';
import type { AssignorInput } from './shard-assignor.interface.js';
import { UniformAssignor } from './uniform.assignor.js';

const uniform = new UniformAssignor();

/** Runs the assignor, checks the contract, returns the plain output. */
function assign(input: AssignorInput): Record<string, Record<string, number[]>> {
  const output = uniform.assign(input);
  expect(contractViolations(input, output)).toEqual([]);
  return plain(output);
}

describe('UniformAssignor: basics', () => {
  it('is named "uniform"', () => {
    expect(uniform.name).toBe('uniform');
    expect(UniformAssignor.NAME).toBe('uniform');
  });

  it('returns an empty map for an empty group', () => {
    expect(assign(assignorInput({}, { t1: 3 }))).toEqual({});
  });

  it('gives members without subscriptions, or subscribed only to absent streams, nothing (Kafka testOneMemberNoTopicSubscription / ...NonexistentTopic)', () => {
    // Kafka throws for a nonexistent topic; here absent streams are simply not assignable yet.
    expect(assign(assignorInput({ A: { subs: [] } }, { t1: 3 }))).toEqual({ A: {} });
    expect(assign(assignorInput({ A: { subs: ['t2'] }, B: { subs: ['t3'] } }, { t1: 3 }))).toEqual({
      A: {},
      B: {},
    });
  });

  it('returns the shared empty assignment for members that get nothing', () => {
    const input = assignorInput(
      { A: { subs: ['t1'] }, B: { subs: ['t1'] }, C: { subs: [] } },
      { t1: 1 },
    );
    const out = uniform.assign(input);
    expect(out.get('B')).toBe(EMPTY_ASSIGNMENT);
    expect(out.get('C')).toBe(EMPTY_ASSIGNMENT);
  });

  it('refuses a member stored under another id', () => {
    const input = assignorInput({ A: { subs: ['t1'] } }, { t1: 1 });
    const members = new Map([['B', input.members.get('A')!]]);
    expect(() => uniform.assign({ members, streams: input.streams })).toThrow(
      InvalidAssignorInputError,
    );
    expect(() => uniform.assign({ members, streams: input.streams })).toThrow(
      /stored under "B" has memberId "A"/,
    );
  });

  it('refuses shard ids that are not strictly ascending non-negative integers', () => {
    for (const bad of [[1, 0], [0, 0], [-1], [0.5], [Number.NaN]]) {
      const input = assignorInput({ A: { subs: ['t1'] } }, { t1: bad });
      expect(() => uniform.assign(input), JSON.stringify(bad)).toThrow(/stream "t1": shard ids/);
    }
  });

  it('assigns sparse shard ids (a stream mid-reshard) by id', () => {
    const out = assign(
      assignorInput(
        { A: { subs: ['t1'], prev: { t1: [7, 9] } }, B: { subs: ['t1'] } },
        { t1: [2, 7, 9, 40] },
      ),
    );
    expect(out).toEqual({ A: { t1: [7, 9] }, B: { t1: [2, 40] } });
  });
});

describe('UniformAssignor: homogeneous (Kafka UniformHomogeneousAssignmentBuilderTest, adapted)', () => {
  // Kafka balances totals only; we also balance every stream, so targets differ where Kafka's
  // split a stream unevenly. Each case names the Kafka test and states the difference.

  it('first assignment, two members, two streams (testFirstAssignmentTwoMembersTwoTopicsNoMemberRacks)', () => {
    // Kafka: A={t3:0,1}, B={t1:0,1,2} (t1 3–0, t3 2–0 per stream). Here each stream splits evenly.
    expect(
      assign(
        assignorInput({ A: { subs: ['t1', 't3'] }, B: { subs: ['t1', 't3'] } }, { t1: 3, t3: 2 }),
      ),
    ).toEqual({ A: { t1: [0, 1], t3: [0] }, B: { t1: [2], t3: [1] } });
  });

  it('more members than shards: the extra member gets nothing (testFirstAssignmentNumMembersGreaterThanTotalNumPartitions)', () => {
    // Kafka leaves A empty; here the first members in id order take the shards.
    expect(
      assign(
        assignorInput({ A: { subs: ['t3'] }, B: { subs: ['t3'] }, C: { subs: ['t3'] } }, { t3: 2 }),
      ),
    ).toEqual({ A: { t3: [0] }, B: { t3: [1] }, C: {} });
  });

  it('unbalanced previous target is rebalanced with the fewest moves (testReassignmentForTwoMembersTwoTopicsGivenUnbalancedPrevAssignment)', () => {
    // One shard moves, as in Kafka (which keeps t1:1 and moves t2:1 — the mirror image).
    const input = assignorInput(
      {
        A: { subs: ['t1', 't2'], prev: { t1: [0, 1], t2: [0, 1] } },
        B: { subs: ['t1', 't2'], prev: { t1: [2], t2: [2] } },
      },
      { t1: 3, t2: 3 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0], t2: [0, 1] },
      B: { t1: [1, 2], t2: [2] },
    });
  });

  it('shards added to both streams (testReassignmentWhenPartitionsAreAddedForTwoMembersTwoTopics)', () => {
    // Kafka: A={t1:0,2; t2:0,3,4}, B={t1:1,3,4,5; t2:1,2} (t1 split 2–4). Nobody loses a shard.
    const input = assignorInput(
      {
        A: { subs: ['t1', 't2'], prev: { t1: [0, 2], t2: [0] } },
        B: { subs: ['t1', 't2'], prev: { t1: [1], t2: [1, 2] } },
      },
      { t1: 6, t2: 5 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 2, 3], t2: [0, 3, 4] },
      B: { t1: [1, 4, 5], t2: [1, 2] },
    });
  });

  it('one member added: only the newcomer receives shards (testReassignmentWhenOneMemberAddedAfterInitialAssignmentWithTwoMembersTwoTopics)', () => {
    // Kafka: A={t1:0,2}, B={t1:1; t2:1}, C={t2:0,2}. Same number of moves (2), per stream balanced.
    const input = assignorInput(
      {
        A: { subs: ['t1', 't2'], prev: { t1: [0, 2], t2: [0] } },
        B: { subs: ['t1', 't2'], prev: { t1: [1], t2: [1, 2] } },
        C: { subs: ['t1', 't2'] },
      },
      { t1: 3, t2: 3 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0], t2: [0] },
      B: { t1: [1], t2: [1] },
      C: { t1: [2], t2: [2] },
    });
  });

  it('one member removed: the others keep theirs and share its shards (testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersTwoTopics)', () => {
    // Kafka: A={t1:0; t2:0,2}, B={t1:1,2; t2:1} — the mirror image.
    const input = assignorInput(
      {
        A: { subs: ['t1', 't2'], prev: { t1: [0], t2: [0] } },
        B: { subs: ['t1', 't2'], prev: { t1: [1], t2: [1] } },
      },
      { t1: 3, t2: 3 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 2], t2: [0] },
      B: { t1: [1], t2: [1, 2] },
    });
  });

  it('a subscription removed: its shards are released (testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics)', () => {
    const input = assignorInput(
      {
        A: { subs: ['t2'], prev: { t1: [0], t2: [0] } },
        B: { subs: ['t2'], prev: { t1: [1], t2: [1] } },
      },
      { t1: 2, t2: 2 },
    );
    expect(assign(input)).toEqual({ A: { t2: [0] }, B: { t2: [1] } });
  });

  it('a member holding everything keeps its quota of each stream (Kafka heterogeneous testReassignmentWhenTopicPartitionsRunOutAndMembersHaveNoPartitions)', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1', 't2', 't3'], prev: { t1: [0, 1], t2: [0, 1], t3: [0, 1] } },
        B: { subs: ['t1', 't2', 't3'] },
      },
      { t1: 2, t2: 2, t3: 2 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0], t2: [0], t3: [0] },
      B: { t1: [1], t2: [1], t3: [1] },
    });
  });

  it('the "+1" of every stream rotates so that totals stay within one', () => {
    const members = Object.fromEntries(
      ['A', 'B', 'C'].map((id) => [id, { subs: ['a', 'b', 'c', 'd'] }]),
    );
    const out = assign(assignorInput(members, { a: 4, b: 4, c: 4, d: 4 }));
    // 4 shards over 3 members per stream: one "+1" per stream, 4 in all → sizes 6, 5, 5.
    expect(Object.values(out).map((a) => Object.values(a).flat().length)).toEqual([6, 5, 5]);
    for (const stream of ['a', 'b', 'c', 'd']) {
      expect(
        Object.values(out)
          .map((a) => a[stream]?.length ?? 0)
          .sort((x, y) => x - y),
      ).toEqual([1, 1, 2]);
    }
  });

  it('scaling N → N+1 with one stream moves only what the newcomer needs', () => {
    const ids = ['A', 'B', 'C', 'D'];
    const first = uniform.assign(
      assignorInput(Object.fromEntries(ids.map((id) => [id, { subs: ['orders'] }])), {
        orders: 16,
      }),
    );
    expect(plain(first)).toEqual({
      A: { orders: [0, 1, 2, 3] },
      B: { orders: [4, 5, 6, 7] },
      C: { orders: [8, 9, 10, 11] },
      D: { orders: [12, 13, 14, 15] },
    });
    const members = Object.fromEntries(
      ids.map((id) => [
        id,
        { subs: ['orders'], prev: { orders: first.get(id)?.get('orders') ?? [] } },
      ]),
    );
    expect(assign(assignorInput({ ...members, E: { subs: ['orders'] } }, { orders: 16 }))).toEqual({
      A: { orders: [0, 1, 2, 3] },
      B: { orders: [4, 5, 6] },
      C: { orders: [8, 9, 10] },
      D: { orders: [12, 13, 14] },
      E: { orders: [7, 11, 15] },
    });
  });

  it('per-stream balance can force a move between remaining members (documented trade-off)', () => {
    // 3 members, s0 has 2 shards, s1 and s2 one each. m1 leaves. Two members must split s0 1–1
    // and each take one of s1/s2: m2 cannot keep both, although it held them.
    const input = assignorInput(
      {
        m0: { subs: ['s0', 's1', 's2'], prev: { s0: [0] } },
        m2: { subs: ['s0', 's1', 's2'], prev: { s1: [0], s2: [0] } },
      },
      { s0: 2, s1: 1, s2: 1 },
    );
    expect(assign(input)).toEqual({
      m0: { s0: [0], s1: [0] },
      m2: { s0: [1], s2: [0] },
    });
  });

  it('overlapping previous targets: the smallest member id keeps the shard', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [0, 1] } },
        B: { subs: ['t1'], prev: { t1: [1, 2] } },
      },
      { t1: 4 },
    );
    expect(assign(input)).toEqual({ A: { t1: [0, 1] }, B: { t1: [2, 3] } });
  });

  it('ignores stale previous shards: removed shards, absent and unsubscribed streams', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [5, 6, 99], gone: [0], t2: [0, 1] } },
        B: { subs: ['t1'], prev: { t1: [7] } },
      },
      { t1: 8, t2: 2 },
    );
    expect(assign(input)).toEqual({ A: { t1: [0, 1, 5, 6] }, B: { t1: [2, 3, 4, 7] } });
  });
});
