import { describe, expect, it } from 'vitest';
import {
  type Assignment,
  assignmentOf,
  EMPTY_ASSIGNMENT,
  toRecord,
} from '../../core/assignment.js';
import type { AssignorMember } from '../../core/assignors/shard-assignor.interface.js';
import { ActiveStandbyAssignor } from './active-standby.assignor.js';

const member = (
  memberId: string,
  subscribedStreams: string[],
  previousTarget: Assignment = EMPTY_ASSIGNMENT,
): AssignorMember => ({
  memberId,
  instanceId: null,
  rackId: null,
  subscribedStreams,
  previousTarget,
});
const run = (
  members: AssignorMember[],
  streams: Record<string, number>,
): Record<string, Record<string, number[]>> => {
  const result = new ActiveStandbyAssignor().assign({
    members: new Map(
      [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : 1)).map((m) => [m.memberId, m]),
    ),
    streams: new Map(
      Object.entries(streams).map(([s, n]) => [s, Array.from({ length: n }, (_, i) => i)]),
    ),
  });
  return Object.fromEntries([...result].map(([id, a]) => [id, toRecord(a)]));
};

describe('ActiveStandbyAssignor', () => {
  it('gives every shard of a stream to the subscriber with the smallest id, nothing to the others', () => {
    expect(run([member('b', ['orders']), member('a', ['orders'])], { orders: 3 })).toEqual({
      a: { orders: [0, 1, 2] },
      b: {},
    });
  });

  it('keeps the previous active member (sticky), even when a smaller id joins', () => {
    const previous = assignmentOf({ orders: [0, 1, 2] });
    expect(
      run([member('b', ['orders'], previous), member('a', ['orders'])], { orders: 3 }),
    ).toEqual({
      a: {},
      b: { orders: [0, 1, 2] },
    });
  });

  it('chooses per stream among that stream’s subscribers only', () => {
    expect(
      run([member('a', ['orders']), member('b', ['orders', 'payments'])], {
        orders: 2,
        payments: 2,
      }),
    ).toEqual({
      a: { orders: [0, 1] },
      b: { payments: [0, 1] },
    });
  });
});
