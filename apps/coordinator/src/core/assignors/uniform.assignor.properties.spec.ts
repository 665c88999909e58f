import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  anyGroupArb,
  classedGroupArb,
  homogeneousGroupArb,
  smallHomogeneousGroupArb,
} from '../../../../../test/support/assignor-arbitraries.js';
import { contractViolations, plain } from '../../../../../test/support/assignor-fixtures.js';
import {
  costReducingPath,
  keptShards,
  maxKeptBalanced,
} from '../../../../../test/support/assignor-oracle.js';
import { type Assignment, EMPTY_ASSIGNMENT, isSubset, size, subtract } from '../assignment.js';
import type { AssignorInput, AssignorMember } from './shard-assignor.interface.js';
import { UniformAssignor } from './uniform.assignor.js';

const uniform = new UniformAssignor();
/** Raise with RUNS=20000 for a deeper search. */
const RUNS = { numRuns: Number(process.env.RUNS ?? 300) };

/** Members subscribing to an existing, non-empty stream → those streams. */
function activeSubscriptions(input: AssignorInput): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [id, m] of input.members) {
    const subs = m.subscribedStreams.filter((s) => (input.streams.get(s)?.length ?? 0) > 0);
    if (subs.length > 0) out.set(id, subs);
  }
  return out;
}

/** `input` plus `extra` members, previous targets replaced by `targets` (missing → empty). */
function withPrevious(
  input: AssignorInput,
  targets: ReadonlyMap<string, Assignment>,
  extra: AssignorMember[] = [],
): AssignorInput {
  const all = [...input.members.values(), ...extra].sort((a, b) =>
    a.memberId < b.memberId ? -1 : 1,
  );
  const members = new Map<string, AssignorMember>();
  for (const m of all) {
    members.set(m.memberId, { ...m, previousTarget: targets.get(m.memberId) ?? EMPTY_ASSIGNMENT });
  }
  return { members, streams: input.streams };
}

/** `input` plus a newcomer with the same subscription and no previous target. */
function withNewcomer(
  input: AssignorInput,
  first: Map<string, Assignment>,
  n: number,
): [AssignorInput, string] {
  let id = `m${String(n).padStart(2, '0')}`;
  while (input.members.has(id)) id = `${id}x`;
  const subs = input.members.values().next().value?.subscribedStreams ?? [];
  const newcomer: AssignorMember = {
    memberId: id,
    instanceId: null,
    rackId: null,
    subscribedStreams: subs,
    previousTarget: EMPTY_ASSIGNMENT,
  };
  return [withPrevious(input, first, [newcomer]), id];
}

/** `input` without the member at `pick`, previous targets replaced by `first`. */
function withoutOne(
  input: AssignorInput,
  first: Map<string, Assignment>,
  pick: number,
): AssignorInput {
  const ids = [...input.members.keys()];
  const leaving = ids[pick % ids.length];
  const rest = new Map([...input.members].filter(([id]) => id !== leaving));
  return withPrevious({ members: rest, streams: input.streams }, first);
}

function spread(values: number[]): number {
  return values.length === 0 ? 0 : Math.max(...values) - Math.min(...values);
}

/** Shards members received that were not in their previous target. */
function movedShards(input: AssignorInput, output: Map<string, Assignment>): number {
  let moved = 0;
  for (const [id, target] of output) {
    moved += size(subtract(target, input.members.get(id)?.previousTarget ?? EMPTY_ASSIGNMENT));
  }
  return moved;
}

describe('UniformAssignor properties: contract', () => {
  it('satisfies the ShardAssignor contract on any group, stale and overlapping previous targets included', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        expect(contractViolations(input, uniform.assign(input))).toEqual([]);
      }),
      RUNS,
    );
  });

  it('is deterministic, also when the streams map is built in another order', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        const reordered: AssignorInput = {
          members: input.members,
          streams: new Map([...input.streams].reverse()),
        };
        const a = plain(uniform.assign(input));
        expect(plain(uniform.assign(input))).toEqual(a);
        expect(plain(uniform.assign(reordered))).toEqual(a);
      }),
      RUNS,
    );
  });

  it('gives members without an existing subscribed stream an empty assignment', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        const output = uniform.assign(input);
        const active = activeSubscriptions(input);
        for (const id of input.members.keys()) {
          if (!active.has(id)) expect(size(output.get(id) ?? EMPTY_ASSIGNMENT)).toBe(0);
        }
      }),
      RUNS,
    );
  });

  it('is a fixpoint: re-running on its own output changes nothing', () => {
    fc.assert(
      fc.property(fc.oneof(anyGroupArb, homogeneousGroupArb), (input) => {
        const first = uniform.assign(input);
        expect(plain(uniform.assign(withPrevious(input, first)))).toEqual(plain(first));
      }),
      RUNS,
    );
  });
});

describe('UniformAssignor properties: homogeneous balance and stickiness', () => {
  it('balances totals and every stream to within one shard', () => {
    fc.assert(
      fc.property(homogeneousGroupArb, (input) => {
        const output = uniform.assign(input);
        const active = activeSubscriptions(input);
        const ids = [...active.keys()];
        const totals = ids.map((id) => size(output.get(id) ?? EMPTY_ASSIGNMENT));
        expect(spread(totals)).toBeLessThanOrEqual(1);
        for (const s of active.values().next().value ?? []) {
          const perStream = ids.map((id) => output.get(id)?.get(s)?.length ?? 0);
          expect(spread(perStream), `stream ${s}`).toBeLessThanOrEqual(1);
        }
      }),
      RUNS,
    );
  });

  it('keeps the most previous shards any per-stream and total balanced assignment can (brute force)', () => {
    fc.assert(
      fc.property(smallHomogeneousGroupArb(7), (input) => {
        expect(keptShards(input, uniform.assign(input))).toBe(maxKeptBalanced(input));
      }),
      RUNS,
    );
  });

  it('N → N+1 from its own output moves the fewest shards balance allows (brute force)', () => {
    fc.assert(
      fc.property(smallHomogeneousGroupArb(6), fc.nat(9), (start, n) => {
        const [input, newcomer] = withNewcomer(start, uniform.assign(start), n);
        const output = uniform.assign(input);
        expect(keptShards(input, output)).toBe(maxKeptBalanced(input));
        // The newcomer's shards move in any case; at least it receives its floor(P/M).
        expect(movedShards(input, output)).toBeGreaterThanOrEqual(
          size(output.get(newcomer) ?? EMPTY_ASSIGNMENT),
        );
      }),
      RUNS,
    );
  });

  it('N → N-1 from its own output moves the fewest shards balance allows (brute force)', () => {
    fc.assert(
      fc.property(smallHomogeneousGroupArb(7), fc.nat(), (start, pick) => {
        fc.pre(start.members.size > 1);
        const input = withoutOne(start, uniform.assign(start), pick);
        expect(keptShards(input, uniform.assign(input))).toBe(maxKeptBalanced(input));
      }),
      RUNS,
    );
  });

  it('one stream, N → N+1: only the shards the newcomer receives move', () => {
    const oneStream = homogeneousGroupArb.filter(
      (input) => activeSubscriptions(input).values().next().value?.length === 1,
    );
    fc.assert(
      fc.property(oneStream, fc.nat(99), (start, n) => {
        const first = uniform.assign(start);
        const [input, newcomer] = withNewcomer(start, first, n);
        const output = uniform.assign(input);
        for (const [id, target] of output) {
          if (id !== newcomer)
            expect(isSubset(target, first.get(id) ?? EMPTY_ASSIGNMENT), id).toBe(true);
        }
        expect(movedShards(input, output)).toBe(size(output.get(newcomer) ?? EMPTY_ASSIGNMENT));
      }),
      RUNS,
    );
  });

  it('one stream, N → N-1: no remaining member loses a shard', () => {
    const oneStream = homogeneousGroupArb.filter(
      (input) => activeSubscriptions(input).values().next().value?.length === 1,
    );
    fc.assert(
      fc.property(oneStream, fc.nat(), (start, pick) => {
        fc.pre(start.members.size > 1);
        const first = uniform.assign(start);
        const input = withoutOne(start, first, pick);
        for (const [id, target] of uniform.assign(input)) {
          expect(isSubset(first.get(id) ?? EMPTY_ASSIGNMENT, target), id).toBe(true);
        }
      }),
      RUNS,
    );
  });
});

describe('UniformAssignor properties: heterogeneous balance', () => {
  it('leaves no cost-reducing path: loads are as balanced as the subscriptions allow', () => {
    fc.assert(
      fc.property(anyGroupArb, (input) => {
        expect(costReducingPath(input, uniform.assign(input))).toBeNull();
      }),
      RUNS,
    );
  });

  it("balances to within one when every stream's subscribers share the same subscription", () => {
    fc.assert(
      fc.property(classedGroupArb, (input) => {
        const output = uniform.assign(input);
        const bySubscription = new Map<string, number[]>();
        for (const [id, subs] of activeSubscriptions(input)) {
          const key = subs.join(',');
          const sizes = bySubscription.get(key) ?? [];
          sizes.push(size(output.get(id) ?? EMPTY_ASSIGNMENT));
          bySubscription.set(key, sizes);
        }
        for (const [key, sizes] of bySubscription)
          expect(spread(sizes), key).toBeLessThanOrEqual(1);
      }),
      RUNS,
    );
  });
});
