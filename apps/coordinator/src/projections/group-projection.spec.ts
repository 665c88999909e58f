import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { foldEvents } from './group-projection.js';
import { ProjectionGapError } from './projection.errors.js';

const meta = { groupEpoch: 1, assignmentEpoch: 1, createdAt: 5, metadataSignature: 'orders@1' };
let seq = 0;
function entry(type: string, data: Record<string, unknown>): GroupEventEntry {
  seq += 1;
  return {
    id: `${1000 + seq}-0`,
    type,
    at: new Date(1000 + seq).toISOString(),
    groupEpoch: 1,
    data,
  };
}
const change = (v: number, m: Array<[string, string]> = [], md: string[] = []): GroupEventEntry =>
  entry('GROUP_STATE_CHANGED', { v, meta, m, md, t: [], td: [] });

describe('foldEvents', () => {
  it("starts at the group's first change and applies the next versions in order", () => {
    const p = foldEvents('g', null, [
      entry('MEMBER_JOINED', { memberId: 'a' }),
      change(1, [['a', '{"id":"a"}']]),
      change(2, [['b', '{"id":"b"}']]),
      change(3, [], ['a']),
      entry('MEMBER_LEFT', { memberId: 'a' }),
    ]);
    expect(p?.version).toBe(3);
    expect(p?.members).toEqual({ b: '{"id":"b"}' });
    expect(p?.eventsFolded).toBe(4);
  });

  it('skips everything before the first checkpoint when the log does not start at version 1', () => {
    expect(foldEvents('g', null, [change(7), entry('SHARDS_ASSIGNED', {})])).toBeNull();
    const p = foldEvents('g', null, [
      change(7),
      entry('GROUP_CHECKPOINT', {
        v: 7,
        meta: { groupEpoch: '4', assignmentEpoch: '4', createdAt: '5', metadataSignature: 'x' },
        m: ['a', '{"id":"a"}'],
        t: {},
      }),
      change(8, [['c', '{"id":"c"}']]),
    ]);
    expect(p?.version).toBe(8);
    expect(p?.meta.groupEpoch).toBe(1);
    expect(p?.members).toEqual({ a: '{"id":"a"}', c: '{"id":"c"}' });
    expect(p?.targets).toEqual({});
  });

  it('refuses a missing version, and a newer checkpoint re-bases over a gap', () => {
    const start = foldEvents('g', null, [change(1)]);
    expect(() => foldEvents('g', start, [change(3)])).toThrow(ProjectionGapError);
    const rebased = foldEvents('g', start, [
      entry('GROUP_CHECKPOINT', { v: 3, meta: { groupEpoch: '2' }, m: [], t: ['a', '{}'] }),
    ]);
    expect(rebased?.version).toBe(3);
    expect(rebased?.targets).toEqual({ a: '{}' });
    // Replays of versions already folded are ignored.
    expect(foldEvents('g', rebased, [change(2, [['z', '{}']])])?.members).toEqual({});
  });
});
