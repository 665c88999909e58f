import type { GroupStateName } from '@redis-stream-coordinator/nestjs/protocol';
import { type Assignment, pairs, shardRef, union } from './assignment.js';
import { isReconciledTo, type MemberRecord } from './member.js';

/** Group-level fields persisted with every change. */
export interface GroupMeta {
  readonly groupEpoch: number;
  readonly assignmentEpoch: number;
  /** Compare-and-set version: +1 on every persisted change. */
  readonly version: number;
  /** Fingerprint of the subscribed streams' shard sets the current group epoch accounts for. */
  readonly metadataSignature: string;
  /**
   * The incarnation: when the group was created (Redis clock, ms), set by Redis in the commit that
   * creates the group (a group deleted and created again gets a later one).
   */
  readonly createdAt: number;
  /**
   * Unique identity of the commit that produced this version (random, written with every commit
   * and compared by every compare-and-set, so a version number reused after Redis lost writes is
   * never mistaken for another commit's). `''` before the first commit.
   */
  readonly commitId: string;
}

/** Who holds one shard (its `assigned ∪ pendingRevocation`), Kafka's "partition epoch" map. */
export interface ShardOwner {
  readonly stream: string;
  readonly shard: number;
  readonly memberId: string;
}

/**
 * The committed state of one group, with the derived indexes the protocol needs kept up to date:
 * shard owners, static instance ids and subscription counts.
 */
export class GroupState {
  readonly members = new Map<string, MemberRecord>();
  readonly targets = new Map<string, Assignment>();
  /** shardRef → owner. At most one owner per shard, by construction. */
  readonly owners = new Map<string, ShardOwner>();
  /** instanceId → memberId. */
  readonly staticMembers = new Map<string, string>();
  /** stream → number of members subscribed to it. */
  readonly subscriptionCounts = new Map<string, number>();

  constructor(
    readonly groupId: string,
    public meta: GroupMeta,
  ) {}

  /**
   * A group that has never been written. `now` is only provisional: the commit that creates the
   * group replaces it with the Redis clock at that commit.
   */
  static empty(groupId: string, now: number): GroupState {
    return new GroupState(groupId, {
      groupEpoch: 0,
      assignmentEpoch: 0,
      version: 0,
      metadataSignature: '',
      createdAt: now,
      commitId: '',
    });
  }

  /** Rebuilds a group (and its indexes) from persisted records. */
  static fromRecords(
    groupId: string,
    meta: GroupMeta,
    members: Iterable<MemberRecord>,
    targets: Iterable<readonly [string, Assignment]>,
  ): GroupState {
    const group = new GroupState(groupId, meta);
    for (const m of members) {
      group.members.set(m.memberId, m);
      if (m.instanceId !== null) group.staticMembers.set(m.instanceId, m.memberId);
      for (const s of m.subscribedStreams) {
        group.subscriptionCounts.set(s, (group.subscriptionCounts.get(s) ?? 0) + 1);
      }
      for (const [stream, shard] of pairs(union(m.assigned, m.pendingRevocation))) {
        const ref = shardRef(stream, shard);
        const existing = group.owners.get(ref);
        if (existing) {
          throw new Error(
            `corrupt group ${groupId}: shard ${stream}/${shard} held by both ${existing.memberId} and ${m.memberId}`,
          );
        }
        group.owners.set(ref, { stream, shard, memberId: m.memberId });
      }
    }
    for (const [memberId, target] of targets) group.targets.set(memberId, target);
    return group;
  }
}

/** The group state docs/protocol.md §6.4 describes. */
export function groupStateName(
  meta: GroupMeta,
  members: Iterable<MemberRecord>,
  memberCount: number,
): GroupStateName {
  if (memberCount === 0) return 'EMPTY';
  if (meta.groupEpoch > meta.assignmentEpoch) return 'ASSIGNING';
  for (const m of members) {
    if (!isReconciledTo(m, meta.assignmentEpoch)) return 'RECONCILING';
  }
  return 'STABLE';
}
