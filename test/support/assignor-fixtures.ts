import {
  type Assignment,
  assignmentOf,
  EMPTY_ASSIGNMENT,
  toRecord,
} from '../../apps/coordinator/src/core/assignment.js';
import type {
  AssignorInput,
  AssignorMember,
} from '../../apps/coordinator/src/core/assignors/shard-assignor.interface.js';

/** A member as the assignor tests write it. */
export interface MemberSpec {
  /** Subscribed streams. */
  readonly subs: readonly string[];
  /** Previous target, stream → shard ids. */
  readonly prev?: Readonly<Record<string, readonly number[]>>;
  readonly instanceId?: string | null;
}

/**
 * Builds an assignor input. `streams`: a number `n` means shards `0..n-1`, an array lists the ids.
 * Members are stored in ascending member id order, as the coordinator does.
 */
export function assignorInput(
  members: Readonly<Record<string, MemberSpec>>,
  streams: Readonly<Record<string, number | readonly number[]>>,
): AssignorInput {
  const memberMap = new Map<string, AssignorMember>();
  for (const id of Object.keys(members).sort()) {
    const spec = members[id] as MemberSpec;
    memberMap.set(id, {
      memberId: id,
      instanceId: spec.instanceId ?? null,
      rackId: null,
      subscribedStreams: [...spec.subs].sort(),
      previousTarget: spec.prev ? assignmentOf(spec.prev) : EMPTY_ASSIGNMENT,
    });
  }
  const streamMap = new Map<string, readonly number[]>();
  for (const [name, shards] of Object.entries(streams)) {
    streamMap.set(name, typeof shards === 'number' ? range(shards) : [...shards]);
  }
  return { members: memberMap, streams: streamMap };
}

/** `[0, 1, ..., n-1]`. */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}

/** The output as a plain object, for `toEqual`. */
export function plain(
  result: ReadonlyMap<string, Assignment>,
): Record<string, Record<string, number[]>> {
  const out: Record<string, Record<string, number[]>> = {};
  for (const [id, a] of result) out[id] = toRecord(a);
  return out;
}

/**
 * Every way `output` breaks the ShardAssignor contract for `input` (empty when it holds): an entry
 * per member and no other, only subscribed streams, only assignable shards, each at most once, and
 * every assignable shard of a stream with a subscriber exactly once.
 */
export function contractViolations(
  input: AssignorInput,
  output: ReadonlyMap<string, Assignment>,
): string[] {
  const problems: string[] = [];
  for (const id of input.members.keys()) if (!output.has(id)) problems.push(`no entry for ${id}`);
  const seen = new Map<string, string>();
  for (const [id, assignment] of output) {
    const member = input.members.get(id);
    if (!member) {
      problems.push(`entry for unknown member ${id}`);
      continue;
    }
    for (const [stream, shards] of assignment) {
      if (!member.subscribedStreams.includes(stream))
        problems.push(`${id} got unsubscribed ${stream}`);
      const assignable = new Set(input.streams.get(stream) ?? []);
      if (shards.length === 0) problems.push(`${id} has an empty entry for ${stream}`);
      shards.forEach((s, k) => {
        if (k > 0 && (shards[k - 1] as number) >= s) problems.push(`${id}/${stream} not ascending`);
        if (!assignable.has(s)) problems.push(`${id} got invented shard ${stream}/${s}`);
        const key = `${stream}/${s}`;
        const other = seen.get(key);
        if (other !== undefined) problems.push(`${key} given to ${other} and ${id}`);
        seen.set(key, id);
      });
    }
  }
  for (const [stream, shards] of input.streams) {
    const subscribed = [...input.members.values()].some((m) =>
      m.subscribedStreams.includes(stream),
    );
    if (!subscribed) continue;
    for (const s of shards)
      if (!seen.has(`${stream}/${s}`)) problems.push(`${stream}/${s} unassigned`);
  }
  return problems;
}
