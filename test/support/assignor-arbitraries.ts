import fc from 'fast-check';
import type { AssignorInput } from '../../apps/coordinator/src/core/assignors/shard-assignor.interface.js';
import { assignorInput, type MemberSpec, range } from './assignor-fixtures.js';

/** Stream names the generators draw from; `ghost` never exists. */
export const STREAM_NAMES = ['alpha', 'beta', 'gamma', 'delta', 'eps'] as const;
const ALL_NAMES = [...STREAM_NAMES, 'ghost'];

/** Shard ids of one stream: dense `0..n-1` (n ≤ 64) or a sparse ascending set of up to 64 ids. */
export const shardIds: fc.Arbitrary<number[]> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 64 }).map(range) },
  {
    weight: 1,
    arbitrary: fc
      .uniqueArray(fc.integer({ min: 0, max: 127 }), { maxLength: 64 })
      .map((ids) => ids.sort((a, b) => a - b)),
  },
);

/** 0–5 existing streams with their shard ids. */
export const streamsArb: fc.Arbitrary<Record<string, number[]>> = fc
  .uniqueArray(fc.constantFrom(...STREAM_NAMES), { maxLength: 5 })
  .chain((names) =>
    fc
      .array(shardIds, { minLength: names.length, maxLength: names.length })
      .map((ids) => Object.fromEntries(names.map((n, i) => [n, ids[i] ?? []]))),
  );

/** A previous target that may be stale: any stream (even unsubscribed or absent), any ids. */
export const previousArb: fc.Arbitrary<Record<string, number[]>> = fc.dictionary(
  fc.constantFrom(...ALL_NAMES),
  fc.uniqueArray(fc.integer({ min: 0, max: 140 }), { maxLength: 24 }),
  { maxKeys: 6 },
);

const instanceIdArb = fc.option(fc.constantFrom('i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7'), {
  nil: null,
});

/** 0–`max` distinct member ids `m00`..`m99`. */
export const memberIdsArb = (max: number): fc.Arbitrary<string[]> =>
  fc
    .uniqueArray(fc.integer({ min: 0, max: 99 }), { maxLength: max })
    .map((ns) => ns.map((n) => `m${String(n).padStart(2, '0')}`));

/** Builds members for `ids` from a per-member arbitrary. */
function membersArb(
  max: number,
  member: fc.Arbitrary<MemberSpec>,
): fc.Arbitrary<Record<string, MemberSpec>> {
  return memberIdsArb(max).chain((ids) =>
    fc
      .array(member, { minLength: ids.length, maxLength: ids.length })
      .map((specs) => Object.fromEntries(ids.map((id, i) => [id, specs[i] as MemberSpec]))),
  );
}

/** Any group: random subscriptions (including absent streams), random stale previous targets. */
export const anyGroupArb: fc.Arbitrary<AssignorInput> = fc
  .tuple(
    membersArb(
      30,
      fc.record({ subs: fc.subarray(ALL_NAMES), prev: previousArb, instanceId: instanceIdArb }),
    ),
    streamsArb,
  )
  .map(([members, streams]) => assignorInput(members, streams));

/** A homogeneous group: every member subscribes to the same streams; stale previous targets. */
export const homogeneousGroupArb: fc.Arbitrary<AssignorInput> = fc
  .tuple(fc.subarray(ALL_NAMES, { minLength: 1 }), streamsArb, memberIdsArb(30))
  .chain(([subs, streams, ids]) =>
    fc
      .array(previousArb, { minLength: ids.length, maxLength: ids.length })
      .map((prevs) =>
        assignorInput(
          Object.fromEntries(ids.map((id, i) => [id, { subs, prev: prevs[i] ?? {} }])),
          streams,
        ),
      ),
  );

/**
 * A small homogeneous group the brute-force oracle can handle: 1–3 dense streams of 1–14 shards,
 * 1–`maxMembers` members, random previous targets made disjoint (first member keeps a shard) and
 * partly stale (ids up to 15, an unsubscribed stream).
 */
export const smallHomogeneousGroupArb = (maxMembers: number): fc.Arbitrary<AssignorInput> =>
  fc
    .tuple(
      fc.array(fc.integer({ min: 1, max: 14 }), { minLength: 1, maxLength: 3 }),
      fc.integer({ min: 1, max: maxMembers }),
      fc.array(
        fc.dictionary(
          fc.constantFrom('s0', 's1', 's2', 'other'),
          fc.uniqueArray(fc.integer({ min: 0, max: 15 }), { maxLength: 8 }),
        ),
        { minLength: maxMembers, maxLength: maxMembers },
      ),
    )
    .map(([counts, memberCount, prevs]) => {
      const streams = Object.fromEntries(counts.map((n, i) => [`s${i}`, n]));
      const subs = Object.keys(streams);
      const taken = new Set<string>();
      const members: Record<string, MemberSpec> = {};
      for (let i = 0; i < memberCount; i++) {
        const prev: Record<string, number[]> = {};
        for (const [s, ids] of Object.entries(prevs[i] ?? {})) {
          prev[s] = ids.filter((id) => !taken.has(`${s}/${id}`));
          for (const id of prev[s]) taken.add(`${s}/${id}`);
        }
        members[`m${i}`] = { subs, prev };
      }
      return assignorInput(members, streams);
    });

/**
 * A heterogeneous group where every stream's subscribers share the same subscription: streams are
 * split among 1–3 member classes, each member belongs to one class; random stale previous targets.
 */
export const classedGroupArb: fc.Arbitrary<AssignorInput> = fc
  .tuple(
    streamsArb,
    fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 5, maxLength: 5 }),
    memberIdsArb(30),
  )
  .chain(([streams, streamClass, ids]) =>
    fc
      .tuple(
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: ids.length, maxLength: ids.length }),
        fc.array(previousArb, { minLength: ids.length, maxLength: ids.length }),
      )
      .map(([memberClass, prevs]) => {
        const names = Object.keys(streams);
        const members: Record<string, MemberSpec> = {};
        ids.forEach((id, i) => {
          const c = memberClass[i] ?? 0;
          members[id] = {
            subs: names.filter((_, j) => streamClass[j] === c),
            prev: prevs[i] ?? {},
          };
        });
        return assignorInput(members, streams);
      }),
  );
