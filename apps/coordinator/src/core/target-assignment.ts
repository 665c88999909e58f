import {
  type Assignment,
  EMPTY_ASSIGNMENT,
  equals,
  has,
  pairs,
  shardRef,
  size,
} from './assignment.js';
import type { AssignorMember } from './assignors/shard-assignor.interface.js';
import { type CoordinatorRules, resolveAssignor } from './coordinator-rules.js';
import type { BumpReason } from './group-event.js';
import type { GroupTransaction } from './group-transaction.js';
import type { StreamCatalog } from './stream-catalog.js';

/** Most individual shard moves listed in one TARGET_ASSIGNMENT_CHANGED event. */
const MAX_LISTED_MOVES = 500;
/** Most member ids listed in one ASSIGNOR_FALLBACK event. */
const MAX_LISTED_MEMBERS = 100;

/** The fingerprint of what the group's subscribed streams look like to it right now. */
export function metadataSignature(txn: GroupTransaction, catalog: StreamCatalog): string {
  return txn
    .subscribedStreams()
    .map((s) => `${s}@${catalog.view(txn.groupId, s)?.version ?? '-'}`)
    .join(',');
}

/**
 * Why the metadata signature moved away from `previous`: `reshard` when a subscribed stream whose
 * view changed is being resharded, else `metadata`.
 */
export function metadataChangeReason(
  txn: GroupTransaction,
  catalog: StreamCatalog,
  previous: string,
): BumpReason {
  const before = new Map<string, string>();
  for (const part of previous === '' ? [] : previous.split(',')) {
    const at = part.indexOf('@');
    if (at > 0) before.set(part.slice(0, at), part.slice(at + 1));
  }
  for (const s of txn.subscribedStreams()) {
    const view = catalog.view(txn.groupId, s);
    if (view?.resharding && before.get(s) !== view.version) return 'reshard';
  }
  return 'metadata';
}

/** The streams (and their consumable shards) the assignor sees. */
export function assignableStreams(
  txn: GroupTransaction,
  catalog: StreamCatalog,
): Map<string, readonly number[]> {
  const streams = new Map<string, readonly number[]>();
  for (const s of txn.subscribedStreams()) {
    const view = catalog.view(txn.groupId, s);
    if (view) streams.set(s, view.shards);
  }
  return streams;
}

/**
 * Recomputes the target when `groupEpoch > assignmentEpoch` (Kafka's TargetAssignmentBuilder):
 * runs the group's assignor over every member (the default one, recorded as ASSIGNOR_FALLBACK,
 * when this replica does not have the group's choice), writes the targets that changed, moves the
 * assignment epoch to the group epoch, records which shards moved from whom to whom and why, and
 * marks members that now have work to do for a nudge.
 */
export function maybeUpdateTarget(
  txn: GroupTransaction,
  catalog: StreamCatalog,
  rules: CoordinatorRules,
  reason: BumpReason,
  requesterId: string | null,
): boolean {
  if (txn.meta.groupEpoch <= txn.meta.assignmentEpoch) return false;
  const members = new Map<string, AssignorMember>();
  const sortedIds = [...txn.members.entries()].map(([id]) => id).sort();
  for (const id of sortedIds) {
    const m = txn.members.get(id);
    if (!m) continue;
    members.set(id, {
      memberId: id,
      instanceId: m.instanceId,
      rackId: m.rackId,
      subscribedStreams: m.subscribedStreams,
      previousTarget: txn.targets.get(id) ?? EMPTY_ASSIGNMENT,
    });
  }
  const streams = assignableStreams(txn, catalog);
  const preferences = [...members.keys()].map((id) => txn.members.get(id)?.assignor ?? null);
  const { name: assignorName, assignor, unavailable } = resolveAssignor(preferences, rules);
  if (unavailable !== null) {
    const naming = [...members.keys()].filter(
      (id) => txn.members.get(id)?.assignor === unavailable,
    );
    txn.emit('ASSIGNOR_FALLBACK', {
      assignmentEpoch: txn.meta.groupEpoch,
      requested: unavailable,
      used: assignorName,
      membersNaming: naming.length,
      members: naming.slice(0, MAX_LISTED_MEMBERS),
    });
  }
  const started = performance.now();
  const result = assignor.assign({ members, streams });
  const tookMs = performance.now() - started;
  checkAssignorOutput(assignorName, result, members, streams);

  // Who had each shard in the previous target: members removed by this very change (leave,
  // expiry, fence) included, so a move says whom the shard came from.
  const previousOwner = new Map<string, { stream: string; shard: number; memberId: string }>();
  for (const [id, target] of txn.base.targets) {
    if (members.has(id)) continue;
    for (const [stream, shard] of pairs(target))
      previousOwner.set(shardRef(stream, shard), { stream, shard, memberId: id });
  }
  for (const [id, m] of members) {
    for (const [stream, shard] of pairs(m.previousTarget)) {
      previousOwner.set(shardRef(stream, shard), { stream, shard, memberId: id });
    }
  }
  const moves: Array<{ stream: string; shard: number; from: string | null; to: string | null }> =
    [];
  let moveCount = 0;
  const stillTargeted = new Set<string>();
  for (const [id, m] of members) {
    const next = result.get(id) ?? EMPTY_ASSIGNMENT;
    for (const [stream, shard] of pairs(next)) stillTargeted.add(shardRef(stream, shard));
    if (!equals(next, m.previousTarget)) {
      txn.targets.set(id, next);
      for (const [stream, shard] of pairs(next)) {
        if (has(m.previousTarget, stream, shard)) continue;
        moveCount++;
        if (moves.length < MAX_LISTED_MOVES) {
          moves.push({
            stream,
            shard,
            from: previousOwner.get(shardRef(stream, shard))?.memberId ?? null,
            to: id,
          });
        }
      }
    }
    const current = txn.members.get(id);
    if (id !== requesterId && current && !equals(next, current.assigned)) txn.nudges.add(id);
  }
  // Shards no target holds any more (a reshard removed them, their members unsubscribed or left
  // with nobody to take over): listed with `to: null`.
  for (const [ref, prev] of previousOwner) {
    if (stillTargeted.has(ref)) continue;
    moveCount++;
    if (moves.length < MAX_LISTED_MOVES)
      moves.push({ stream: prev.stream, shard: prev.shard, from: prev.memberId, to: null });
  }
  // a copy first: deleting while the overlay's generator runs would change what it yields
  for (const [id] of Array.from(txn.targets.entries())) {
    if (!members.has(id)) txn.targets.delete(id);
  }
  txn.setMeta({ assignmentEpoch: txn.meta.groupEpoch });
  txn.emit('TARGET_ASSIGNMENT_CHANGED', {
    assignmentEpoch: txn.meta.groupEpoch,
    assignor: assignorName,
    reason,
    assignorMs: Math.round(tookMs * 1000) / 1000,
    members: members.size,
    shards: [...result.values()].reduce((n, a) => n + size(a), 0),
    moved: moveCount,
    moves,
    movesTruncated: moveCount > moves.length,
  });
  txn.assignorRuns.push({ assignor: assignorName, ms: tookMs });
  return true;
}

/** Refuses an assignor result that breaks the ShardAssignor contract (a custom assignor bug). */
function checkAssignorOutput(
  name: string,
  result: Map<string, Assignment>,
  members: ReadonlyMap<string, AssignorMember>,
  streams: ReadonlyMap<string, readonly number[]>,
): void {
  const seen = new Set<string>();
  const assignable = new Map<string, Set<number>>();
  for (const [stream, shards] of streams) assignable.set(stream, new Set(shards));
  for (const [id, assignment] of result) {
    const member = members.get(id);
    if (!member) throw new Error(`assignor ${name} returned a target for unknown member ${id}`);
    for (const [stream, shard] of pairs(assignment)) {
      if (!member.subscribedStreams.includes(stream)) {
        throw new Error(
          `assignor ${name} gave ${stream}/${shard} to ${id}, which does not subscribe to ${stream}`,
        );
      }
      if (!assignable.get(stream)?.has(shard)) {
        throw new Error(
          `assignor ${name} gave ${id} shard ${stream}/${shard}, which is not assignable`,
        );
      }
      const ref = shardRef(stream, shard);
      if (seen.has(ref)) throw new Error(`assignor ${name} gave ${stream}/${shard} to two members`);
      seen.add(ref);
    }
  }
}
