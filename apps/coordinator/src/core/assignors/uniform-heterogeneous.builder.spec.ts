import { describe, expect, it } from 'vitest';
import {
  assignorInput,
  contractViolations,
  plain,
} from '../../../../../test/support/assignor-fixtures.js';
import { assignmentOf } from '../assignment.js';
import type { AssignorInput } from './shard-assignor.interface.js';
import { UniformAssignor } from './uniform.assignor.js';

const uniform = new UniformAssignor();

/** Runs the assignor, checks the contract, returns the plain output. */
function assign(input: AssignorInput): Record<string, Record<string, number[]>> {
  const output = uniform.assign(input);
  expect(contractViolations(input, output)).toEqual([]);
  return plain(output);
}

describe('UniformAssignor: heterogeneous (Kafka UniformHeterogeneousAssignmentBuilderTest, exact)', () => {
  it('testFirstAssignmentTwoMembersTwoTopics', () => {
    expect(
      assign(assignorInput({ A: { subs: ['t1', 't3'] }, B: { subs: ['t3'] } }, { t1: 3, t3: 6 })),
    ).toEqual({ A: { t1: [0, 1, 2], t3: [4] }, B: { t3: [0, 1, 2, 3, 5] } });
  });

  it('testFirstAssignmentNumMembersGreaterThanTotalNumPartitions', () => {
    expect(
      assign(
        assignorInput(
          { A: { subs: ['t3'] }, B: { subs: ['t3'] }, C: { subs: ['t1'] } },
          { t3: 1, t1: 2 },
        ),
      ),
    ).toEqual({ A: { t3: [0] }, B: {}, C: { t1: [0, 1] } });
  });

  it('testReassignmentForTwoMembersThreeTopicsGivenUnbalancedPrevAssignment', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [0, 1, 2] } },
        B: { subs: ['t1', 't2'], prev: { t1: [3], t2: [0] } },
        C: {
          subs: ['t1', 't2', 't3'],
          prev: { t1: [4, 5], t2: [1, 2, 3], t3: [0, 1, 2, 3] },
        },
      },
      { t1: 6, t2: 4, t3: 4 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 1, 2, 5] },
      B: { t1: [3], t2: [0, 1, 2, 3] },
      C: { t1: [4], t3: [0, 1, 2, 3] },
    });
  });

  it('testReassignmentWhenPartitionsAreAddedForTwoMembers', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1', 't3'], prev: { t1: [0, 1, 2, 3], t3: [0, 1] } },
        B: { subs: ['t1', 't2', 't3', 't4'], prev: { t2: [0, 1, 2], t4: [0, 1, 2] } },
      },
      { t1: 6, t2: 5, t3: 3, t4: 3 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 1, 2, 3, 4, 5], t3: [0, 1, 2] },
      B: { t2: [0, 1, 2, 3, 4], t4: [0, 1, 2] },
    });
  });

  it('testReassignmentWhenOneMemberAddedAndPartitionsAddedTwoMembersTwoTopics', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [0, 2], t2: [0] } },
        B: { subs: ['t1', 't2'], prev: { t1: [1], t2: [1, 2] } },
        C: { subs: ['t1', 't2'] },
      },
      { t1: 6, t2: 7 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 2, 3, 4, 5] },
      B: { t1: [1], t2: [1, 2, 6] },
      C: { t2: [0, 3, 4, 5] },
    });
  });

  it('testReassignmentWhenOneMemberRemovedAfterInitialAssignmentWithThreeMembersThreeTopics', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1', 't3'], prev: { t1: [0, 1, 2], t3: [0, 1] } },
        B: { subs: ['t2'], prev: { t2: [3, 4, 5, 6] } },
      },
      { t1: 3, t2: 8, t3: 3 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 1, 2], t3: [0, 1, 2] },
      B: { t2: [0, 1, 2, 3, 4, 5, 6, 7] },
    });
  });

  it('testReassignmentWhenOneSubscriptionRemovedAfterInitialAssignmentWithTwoMembersTwoTopics', () => {
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [0, 2], t2: [1, 3] } },
        B: { subs: ['t1', 't2'], prev: { t1: [1], t2: [0, 2, 4] } },
      },
      { t1: 3, t2: 5 },
    );
    expect(assign(input)).toEqual({ A: { t1: [0, 1, 2] }, B: { t2: [0, 1, 2, 3, 4] } });
  });

  it('testFirstAssignmentWithTwoMembersIncludingOneWithoutSubscriptions', () => {
    expect(assign(assignorInput({ A: { subs: ['t1'] }, B: { subs: [] } }, { t1: 3 }))).toEqual({
      A: { t1: [0, 1, 2] },
      B: {},
    });
  });

  it("balances to within one when each stream's subscribers share a subscription", () => {
    const input = assignorInput(
      {
        A: { subs: ['x'], prev: { x: [0, 1, 2, 3, 4, 5, 6, 7] } },
        B: { subs: ['x'] },
        C: { subs: ['y', 'z'] },
        D: { subs: ['y', 'z'], prev: { y: [0, 1, 2, 3, 4], z: [0, 1, 2] } },
      },
      { x: 8, y: 5, z: 3 },
    );
    expect(assign(input)).toEqual({
      A: { x: [0, 1, 2, 3] },
      B: { x: [4, 5, 6, 7] },
      // Stream by stream (y first: more shards per subscriber), highest ids move first, as Kafka.
      C: { y: [1, 2, 3, 4] },
      D: { y: [0], z: [0, 1, 2] },
    });
  });

  it("chained subscriptions end at 10/10/10 where Kafka's builder stops at 9/10/11", () => {
    // M1 reads t1, M2 reads t1 and t2, M3 reads t2. Kafka's rounds leave 9/10/11 (each stream's
    // subscribers are within one); the path step moves a t2 shard M3 → M2 and a t1 shard M2 → M1.
    const input = assignorInput(
      { M1: { subs: ['t1'] }, M2: { subs: ['t1', 't2'] }, M3: { subs: ['t2'] } },
      { t1: 15, t2: 15 },
    );
    const out = assign(input);
    expect(Object.values(out).map((a) => Object.values(a).flat().length)).toEqual([10, 10, 10]);
  });

  it('stays unbalanced exactly as far as subscriptions force', () => {
    // Only A reads t1 (8 shards); B and C share t2 (2 shards): 8/1/1 is the best possible.
    const input = assignorInput(
      { A: { subs: ['t1', 't2'] }, B: { subs: ['t2'] }, C: { subs: ['t2'] } },
      { t1: 8, t2: 2 },
    );
    expect(assign(input)).toEqual({
      A: { t1: [0, 1, 2, 3, 4, 5, 6, 7] },
      B: { t2: [0] },
      C: { t2: [1] },
    });
  });

  it('the heterogeneous path keeps previous shards where balance allows', () => {
    const prev = { A: assignmentOf({ t1: [0, 1, 2] }), B: assignmentOf({ t1: [3], t2: [0, 1] }) };
    const input = assignorInput(
      {
        A: { subs: ['t1'], prev: { t1: [...(prev.A.get('t1') ?? [])] } },
        B: { subs: ['t1', 't2'], prev: { t1: [3], t2: [0, 1] } },
      },
      { t1: 4, t2: 2 },
    );
    expect(assign(input)).toEqual({ A: { t1: [0, 1, 2] }, B: { t1: [3], t2: [0, 1] } });
  });
});
