import { describe, expect, it } from 'vitest';
import { contractViolations, range } from '../../../../../test/support/assignor-fixtures.js';
import { type Assignment, EMPTY_ASSIGNMENT } from '../assignment.js';
import { RangeAssignor } from './range.assignor.js';
import type { AssignorInput, AssignorMember, ShardAssignor } from './shard-assignor.interface.js';
import { UniformAssignor } from './uniform.assignor.js';

/**
 * Timings of the built-in assignors on 10 streams × 1,000 shards and 1,000 members. Printed for
 * the record; the bound asserted is deliberately generous (the target is < 50 ms).
 */
const STREAMS = Array.from({ length: 10 }, (_, i) => `stream-${i}`);
const SHARDS = 1000;
const MEMBERS = 1000;
const BOUND_MS = 1000;

function memberId(i: number): string {
  return `member-${String(i).padStart(5, '0')}`;
}

/** Heterogeneous pattern: member i skips stream j when (i + j) % 3 == 0, and takes at least one. */
function heterogeneousSubs(i: number): string[] {
  const subs = STREAMS.filter((_, j) => (i + j) % 3 !== 0);
  return subs.length > 0 ? subs : [STREAMS[0] as string];
}

function group(
  count: number,
  subs: (i: number) => string[],
  previous: ReadonlyMap<string, Assignment> = new Map(),
): AssignorInput {
  const members = new Map<string, AssignorMember>();
  for (let i = 0; i < count; i++) {
    const id = memberId(i);
    members.set(id, {
      memberId: id,
      instanceId: null,
      rackId: null,
      subscribedStreams: subs(i),
      previousTarget: previous.get(id) ?? EMPTY_ASSIGNMENT,
    });
  }
  return { members, streams: new Map(STREAMS.map((s) => [s, range(SHARDS)])) };
}

function timed(
  label: string,
  assignor: ShardAssignor,
  input: AssignorInput,
): Map<string, Assignment> {
  for (let i = 0; i < 3; i++) assignor.assign(input); // warm-up (JIT)
  const runs = 10;
  let best = Number.POSITIVE_INFINITY;
  let output = new Map<string, Assignment>();
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    output = assignor.assign(input);
    best = Math.min(best, performance.now() - started);
  }
  console.log(`[assignor perf] ${assignor.name} ${label}: ${best.toFixed(1)} ms (best of ${runs})`);
  expect(best).toBeLessThan(BOUND_MS);
  expect(contractViolations(input, output)).toEqual([]);
  return output;
}

describe('assignor performance: 10,000 shards, 1,000 members', () => {
  const uniform = new UniformAssignor();
  const rangeAssignor = new RangeAssignor();
  const all = (): string[] => STREAMS;

  it('uniform, homogeneous', () => {
    timed('homogeneous, no previous targets', uniform, group(MEMBERS, all));
    const before = uniform.assign(group(MEMBERS - 1, all));
    timed('homogeneous, previous = output for 999 members', uniform, group(MEMBERS, all, before));
    const bigger = uniform.assign(group(MEMBERS + 1, all));
    timed('homogeneous, previous = output for 1,001 members', uniform, group(MEMBERS, all, bigger));
    const ranged = rangeAssignor.assign(group(MEMBERS, all));
    timed('homogeneous, previous = range output', uniform, group(MEMBERS, all, ranged));
  });

  it('uniform, homogeneous, uneven (700 members: 300 of each stream\'s shards are "+1"s)', () => {
    const n = 700;
    timed('uneven, no previous targets', uniform, group(n, all));
    const before = uniform.assign(group(n - 1, all));
    timed('uneven, previous = output for 699 members', uniform, group(n, all, before));
    const bigger = uniform.assign(group(n + 1, all));
    timed('uneven, previous = output for 701 members', uniform, group(n, all, bigger));
    const ranged = rangeAssignor.assign(group(n, all));
    timed('uneven, previous = range output', uniform, group(n, all, ranged));
  });

  it('uniform, heterogeneous', () => {
    timed('heterogeneous, no previous targets', uniform, group(MEMBERS, heterogeneousSubs));
    const before = uniform.assign(group(MEMBERS - 1, heterogeneousSubs));
    timed(
      'heterogeneous, previous = output for 999 members',
      uniform,
      group(MEMBERS, heterogeneousSubs, before),
    );
    const ranged = rangeAssignor.assign(group(MEMBERS, heterogeneousSubs));
    timed(
      'heterogeneous, previous = range output',
      uniform,
      group(MEMBERS, heterogeneousSubs, ranged),
    );
  });

  it('range', () => {
    timed('homogeneous', rangeAssignor, group(MEMBERS, all));
    timed('heterogeneous', rangeAssignor, group(MEMBERS, heterogeneousSubs));
  });
});
