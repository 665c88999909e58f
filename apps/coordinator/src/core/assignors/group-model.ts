import { type Assignment, EMPTY_ASSIGNMENT } from '../assignment.js';
import { InvalidAssignorInputError } from './invalid-assignor-input.error.js';
import { RANK_SPACE } from './number-heap.js';
import type { AssignorInput, AssignorMember } from './shard-assignor.interface.js';

/** One assignable stream, indexed. */
export interface StreamModel {
  readonly name: string;
  /** Assignable shard ids, ascending. Shards are addressed by their position in this list. */
  readonly shards: readonly number[];
  /** True when the shard ids are `0..n-1`, so positions are ids. */
  readonly dense: boolean;
  /** Position of shard `id` in {@link shards}, or -1 when the stream has no such shard. */
  indexOf(id: number): number;
}

/**
 * An {@link AssignorInput} turned into arrays: members numbered `0..M-1` in ascending member id
 * order, streams numbered `0..S-1` in name order (only streams with at least one shard), and each
 * member's subscription reduced to the streams that exist.
 */
export interface GroupModel {
  readonly members: readonly AssignorMember[];
  readonly streams: readonly StreamModel[];
  /** Per member: ascending indices of the existing, non-empty streams it subscribes to. */
  readonly subscriptions: readonly (readonly number[])[];
}

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Validates `input` and indexes it. Throws {@link InvalidAssignorInputError} when a member is
 * stored under another id or a stream's shard ids are not strictly ascending non-negative integers.
 */
export function buildGroupModel(assignor: string, input: AssignorInput): GroupModel {
  const members: AssignorMember[] = [];
  for (const [key, member] of input.members) {
    if (key !== member.memberId) {
      throw new InvalidAssignorInputError(
        assignor,
        `member stored under "${key}" has memberId "${member.memberId}"`,
      );
    }
    members.push(member);
  }
  if (members.length >= RANK_SPACE) {
    throw new InvalidAssignorInputError(
      assignor,
      `${members.length} members; the built-in assignors handle at most ${RANK_SPACE - 1}`,
    );
  }
  members.sort((a, b) => byCodeUnits(a.memberId, b.memberId));

  const names = [...input.streams.keys()].sort(byCodeUnits);
  const streams: StreamModel[] = [];
  const streamIndex = new Map<string, number>();
  for (const name of names) {
    const shards = input.streams.get(name) ?? [];
    checkShardIds(assignor, name, shards);
    if (shards.length === 0) continue;
    streamIndex.set(name, streams.length);
    streams.push(streamModel(name, shards));
  }

  const subscriptions = members.map((m) => {
    const subscribed: number[] = [];
    for (const name of new Set(m.subscribedStreams)) {
      const t = streamIndex.get(name);
      if (t !== undefined) subscribed.push(t);
    }
    return subscribed.sort((a, b) => a - b);
  });
  return { members, streams, subscriptions };
}

function checkShardIds(assignor: string, stream: string, shards: readonly number[]): void {
  let previous = -1;
  for (const id of shards) {
    if (!Number.isSafeInteger(id) || id <= previous) {
      throw new InvalidAssignorInputError(
        assignor,
        `stream "${stream}": shard ids must be strictly ascending non-negative integers, got ${id} after ${previous}`,
      );
    }
    previous = id;
  }
}

function streamModel(name: string, shards: readonly number[]): StreamModel {
  const dense = shards[shards.length - 1] === shards.length - 1;
  if (dense) {
    const n = shards.length;
    return {
      name,
      shards,
      dense,
      indexOf: (id) => (Number.isInteger(id) && id >= 0 && id < n ? id : -1),
    };
  }
  const positions = new Map<number, number>();
  shards.forEach((id, i) => positions.set(id, i));
  return { name, shards, dense, indexOf: (id) => positions.get(id) ?? -1 };
}

/** True when every member subscribes to exactly the same streams (vacuously true for none). */
export function isHomogeneous(subscriptions: readonly (readonly number[])[]): boolean {
  const first = subscriptions[0];
  if (!first) return true;
  return subscriptions.every((s) => s.length === first.length && s.every((t, i) => t === first[i]));
}

/**
 * Builds a member's {@link Assignment} from `shardsByStream[t]` = shard positions of stream `t`
 * (any order; the arrays are sorted in place and may be reused); streams in name order, shard ids
 * ascending, empty streams left out;
 * {@link EMPTY_ASSIGNMENT} when nothing is left.
 */
export function toAssignment(
  streams: readonly StreamModel[],
  shardsByStream: ReadonlyMap<number, number[]>,
): Assignment {
  const out = new Map<string, number[]>();
  const order = [...shardsByStream.keys()].sort((a, b) => a - b);
  for (const t of order) {
    const positions = shardsByStream.get(t);
    const stream = streams[t];
    if (!positions || positions.length === 0 || !stream) continue;
    positions.sort((a, b) => a - b);
    out.set(
      stream.name,
      stream.dense ? positions : positions.map((p) => stream.shards[p] as number),
    );
  }
  return out.size > 0 ? out : EMPTY_ASSIGNMENT;
}
