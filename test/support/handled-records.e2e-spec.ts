import { describe, expect, it } from 'vitest';
import {
  type HandledLine,
  missingMessages,
  orderViolations,
  ownerOverlaps,
} from './handled-records.js';

/** A handled line: member, shard, key, seq, handler start and end. */
function line(m: string, s: number, k: string, q: number, t0: number, t1: number): HandledLine {
  return { m, st: 'orders', s, k, id: `${t0}-0`, q, d: 1, t0, t1 };
}

// The checkers the cluster suite relies on must be able to fail.
describe('invariant checkers of the cluster suite', () => {
  it('finds lost messages', () => {
    const lines = [line('a', 0, 'k', 0, 1, 2), line('a', 0, 'k', 2, 3, 4)];
    expect(missingMessages(lines, { k: 3, other: 1 })).toEqual(['k#1', 'other#0']);
    expect(missingMessages(lines, { k: 1 })).toEqual([]);
  });

  it('finds keys whose first handlings went out of order, ignoring later duplicates', () => {
    const inOrder = [
      line('a', 0, 'k', 0, 1, 2),
      line('a', 0, 'k', 1, 3, 4),
      line('b', 0, 'k', 0, 5, 6),
    ];
    expect(orderViolations(inOrder)).toEqual([]);
    const swapped = [line('a', 0, 'k', 1, 1, 2), line('a', 0, 'k', 0, 3, 4)];
    expect(orderViolations(swapped)).toEqual(['k: seq 0 first handled after 1']);
  });

  it('finds two members handling one shard at the same time', () => {
    const handoff = [
      line('a', 0, 'k', 0, 1, 2),
      line('b', 0, 'k', 1, 2.5, 3),
      line('a', 1, 'j', 0, 2.6, 2.7),
    ];
    expect(ownerOverlaps(handoff)).toEqual([]);
    const overlapping = [line('a', 0, 'k', 0, 1, 5), line('b', 0, 'k', 1, 2, 3)];
    expect(ownerOverlaps(overlapping)).toHaveLength(1);
  });
});
