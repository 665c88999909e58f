import type { GroupStateName } from '@redis-stream-coordinator/nestjs/protocol';
import { pairs, shardRef } from '../core/assignment.js';
import { type GroupState, groupStateName } from '../core/group-state.js';
import type { StreamCatalog } from '../core/stream-catalog.js';

/** Member states as counted by `rsc_coordinator_members` (`TEMPORARILY_LEFT`: a static member at `-2`). */
export const MEMBER_GAUGE_STATES = [
  'STABLE',
  'UNREVOKED_SHARDS',
  'UNRELEASED_SHARDS',
  'TEMPORARILY_LEFT',
] as const;

/** Group states as counted by `rsc_coordinator_groups`. */
export const GROUP_GAUGE_STATES = ['EMPTY', 'ASSIGNING', 'RECONCILING', 'STABLE'] as const;

/** Shard statuses as counted by `rsc_coordinator_shards`. */
export const SHARD_GAUGE_STATUSES = [
  'assigned',
  'unassigned',
  'pending_revocation',
  'awaiting_release',
] as const;

/** The values of every per-group gauge, for one group. */
export interface GroupGaugeValues {
  readonly group: string;
  readonly state: GroupStateName;
  readonly groupEpoch: number;
  readonly assignmentEpoch: number;
  /** Every state of {@link MEMBER_GAUGE_STATES} (0 when none), plus any other state a member is in. */
  readonly members: Readonly<Record<string, number>>;
  readonly shards: Readonly<Record<(typeof SHARD_GAUGE_STATUSES)[number], number>>;
  /**
   * Members (a static member away at `-2` not counted) owning no shard and revoking none: with
   * no shard assigned in the group, its subscribed streams are missing or nobody got shards.
   */
  readonly membersWithoutAssignment: number;
}

/**
 * The per-group gauge values of docs/protocol.md §15.2 computed from a group's state — the live
 * state (scrapes) or one rebuilt from the event log (projections), so both can be compared. Pure.
 */
export function groupGaugeValues(group: GroupState, catalog: StreamCatalog): GroupGaugeValues {
  const list = [...group.members.values()];
  const members: Record<string, number> = Object.fromEntries(
    MEMBER_GAUGE_STATES.map((s) => [s, 0]),
  );
  let assigned = 0;
  let pending = 0;
  let awaiting = 0;
  let withoutAssignment = 0;
  for (const m of list) {
    const key = m.memberEpoch === -2 ? 'TEMPORARILY_LEFT' : m.state;
    members[key] = (members[key] ?? 0) + 1;
    let owned = 0;
    for (const [, ids] of m.assigned) owned += ids.length;
    for (const [, ids] of m.pendingRevocation) owned += ids.length;
    if (owned === 0 && m.memberEpoch !== -2) withoutAssignment++;
    for (const [, ids] of m.assigned) assigned += ids.length;
    for (const [, ids] of m.pendingRevocation) pending += ids.length;
    const target = group.targets.get(m.memberId);
    for (const [stream, shard] of pairs(target ?? new Map())) {
      const owner = group.owners.get(shardRef(stream, shard));
      if (owner && owner.memberId !== m.memberId) awaiting++;
    }
  }
  let total = 0;
  const subscribed = new Set(list.flatMap((m) => m.subscribedStreams));
  for (const stream of subscribed) total += catalog.view(group.groupId, stream)?.shards.length ?? 0;
  return {
    group: group.groupId,
    state: groupStateName(group.meta, list, list.length),
    groupEpoch: group.meta.groupEpoch,
    assignmentEpoch: group.meta.assignmentEpoch,
    members,
    shards: {
      assigned,
      unassigned: Math.max(0, total - assigned - pending),
      pending_revocation: pending,
      awaiting_release: awaiting,
    },
    membersWithoutAssignment: withoutAssignment,
  };
}
