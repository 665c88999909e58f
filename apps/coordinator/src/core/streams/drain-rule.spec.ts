import { describe, expect, it } from 'vitest';
import {
  compareStreamIds,
  type ConsumerGroupInfo,
  isDrainedFor,
  type ShardInspection,
} from './drain-rule.js';

const shard = (
  length: number,
  lastEntryId: string | null,
  groups: ConsumerGroupInfo[],
): ShardInspection => ({
  length,
  lastEntryId,
  groups: new Map(groups.map((g) => [g.name, g])),
});
const group = (
  name: string,
  pending: number,
  lastDeliveredId: string,
  lag: number | null,
): ConsumerGroupInfo => ({
  name,
  pending,
  lastDeliveredId,
  lag,
});

describe('compareStreamIds', () => {
  it('orders by milliseconds, then sequence, numerically (not as text)', () => {
    expect(compareStreamIds('9-0', '10-0')).toBeLessThan(0);
    expect(compareStreamIds('10-2', '10-10')).toBeLessThan(0);
    expect(compareStreamIds('10-10', '10-10')).toBe(0);
    expect(compareStreamIds('10', '10-0')).toBe(0);
    expect(compareStreamIds('18446744073709551615-1', '18446744073709551615-0')).toBeGreaterThan(0);
  });

  it('refuses malformed ids', () => {
    expect(() => compareStreamIds('abc', '1-0')).toThrow(RangeError);
  });
});

describe('isDrainedFor', () => {
  it('needs nothing pending', () => {
    expect(isDrainedFor(shard(3, '5-0', [group('g', 1, '5-0', 0)]), 'g')).toBe(false);
  });

  it('lag 0 proves everything was delivered', () => {
    expect(isDrainedFor(shard(3, '5-0', [group('g', 0, '5-0', 0)]), 'g')).toBe(true);
  });

  it('a null lag proves nothing unless the last-delivered id reaches the last entry', () => {
    expect(isDrainedFor(shard(3, '5-0', [group('g', 0, '4-0', null)]), 'g')).toBe(false);
    expect(isDrainedFor(shard(3, '5-0', [group('g', 0, '5-0', null)]), 'g')).toBe(true);
    expect(isDrainedFor(shard(3, '5-0', [group('g', 0, '6-0', null)]), 'g')).toBe(true);
  });

  it('a positive lag is not drained even if ids look far ahead', () => {
    expect(isDrainedFor(shard(3, '5-0', [group('g', 0, '4-9', 2)]), 'g')).toBe(false);
  });

  it('an empty stream is drained once nothing is pending', () => {
    expect(isDrainedFor(shard(0, null, [group('g', 0, '0-0', null)]), 'g')).toBe(true);
    expect(isDrainedFor(shard(0, null, [group('g', 2, '0-0', null)]), 'g')).toBe(false);
  });

  it('a missing consumer group: drained only when the stream is empty', () => {
    expect(isDrainedFor(shard(0, null, []), 'g')).toBe(true);
    expect(isDrainedFor(shard(1, '1-0', [group('other', 0, '1-0', 0)]), 'g')).toBe(false);
  });
});
