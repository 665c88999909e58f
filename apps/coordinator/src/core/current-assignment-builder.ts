import {
  type Assignment,
  EMPTY_ASSIGNMENT,
  equals,
  filter,
  intersect,
  isEmpty,
  overlaps,
  subtract,
  union,
} from './assignment.js';
import { CoordinatorError } from './coordinator-error.js';
import type { MemberRecord } from './member.js';

/** What reconciliation needs to know about the rest of the group. */
export interface ReconcileContext {
  /** The current owner (assigned or pending revocation) of a shard, if any. */
  ownerOf(stream: string, shard: number): string | undefined;
  /** Coordinator clock, for the rebalance timer. */
  readonly now: number;
}

/**
 * Moves one member towards its target, per Kafka's `CurrentAssignmentBuilder` (newer rules:
 * the epoch never changes inside UNREVOKED_SHARDS, KAFKA-19974; a member's own pending shards do
 * not count as held by someone else, KAFKA-19449). Pure.
 *
 * @param member     the member before this heartbeat
 * @param targetEpoch the group's assignment epoch
 * @param target     the member's target assignment
 * @param owned      what the member reported owning (`undefined` = not sent: assume it still owns
 *                   everything it was given)
 * @throws CoordinatorError FENCED_MEMBER_EPOCH when the stored state is one this version does not
 *                   know (written by a newer coordinator) and the member did not report owning
 *                   nothing; it must rejoin with an empty `ownedShards` (Kafka's UNKNOWN state)
 */
export function reconcileMember(
  member: MemberRecord,
  targetEpoch: number,
  target: Assignment,
  owned: Assignment | undefined,
  ctx: ReconcileContext,
): MemberRecord {
  const owns = (shards: Assignment): boolean => owned === undefined || overlaps(owned, shards);
  switch (member.state) {
    case 'STABLE':
      if (member.memberEpoch === targetEpoch) return member;
      return computeNext(member, member.memberEpoch, targetEpoch, target, owns, ctx);
    case 'UNREVOKED_SHARDS':
      if (owns(member.pendingRevocation)) return member;
      return computeNext(member, member.memberEpoch, targetEpoch, target, owns, ctx);
    case 'UNRELEASED_SHARDS':
      return computeNext(member, member.memberEpoch, targetEpoch, target, owns, ctx);
    default:
      // A state written by a newer version: fence the member so it rejoins owning nothing, then
      // reconcile it from scratch (Kafka's UNKNOWN member state).
      if (owned === undefined || !isEmpty(owned)) {
        throw new CoordinatorError(
          'FENCED_MEMBER_EPOCH',
          `member "${member.memberId}" is in unknown state "${String(member.state)}"; drop all shards and rejoin with memberEpoch 0 and empty ownedShards`,
        );
      }
      return computeNext(member, targetEpoch, targetEpoch, target, owns, ctx);
  }
}

function computeNext(
  member: MemberRecord,
  keepEpoch: number,
  targetEpoch: number,
  target: Assignment,
  owns: (shards: Assignment) => boolean,
  ctx: ReconcileContext,
): MemberRecord {
  const keep = intersect(member.assigned, target);
  const revoke = subtract(member.assigned, keep);
  const wanted = subtract(target, keep);
  const heldByOthers = (stream: string, shard: number): boolean => {
    const owner = ctx.ownerOf(stream, shard);
    return owner !== undefined && owner !== member.memberId;
  };
  const add = filter(wanted, (stream, shard) => !heldByOthers(stream, shard));
  const unreleased = !equals(add, wanted);

  if (!isEmpty(revoke) && owns(revoke)) {
    const samePending = equals(member.pendingRevocation, revoke);
    return withEpoch(member, keepEpoch, {
      state: 'UNREVOKED_SHARDS',
      assigned: keep,
      pendingRevocation: revoke,
      revokeStartedAt:
        member.state === 'UNREVOKED_SHARDS' && samePending && member.revokeStartedAt !== null
          ? member.revokeStartedAt
          : ctx.now,
    });
  }
  if (!isEmpty(add)) {
    return withEpoch(member, targetEpoch, {
      state: unreleased ? 'UNRELEASED_SHARDS' : 'STABLE',
      assigned: union(keep, add),
      pendingRevocation: EMPTY_ASSIGNMENT,
      revokeStartedAt: null,
    });
  }
  return withEpoch(member, targetEpoch, {
    state: unreleased ? 'UNRELEASED_SHARDS' : 'STABLE',
    assigned: keep,
    pendingRevocation: EMPTY_ASSIGNMENT,
    revokeStartedAt: null,
  });
}

function withEpoch(
  member: MemberRecord,
  epoch: number,
  fields: Pick<MemberRecord, 'state' | 'assigned' | 'pendingRevocation' | 'revokeStartedAt'>,
): MemberRecord {
  const epochChanged = epoch !== member.memberEpoch;
  if (
    !epochChanged &&
    fields.state === member.state &&
    fields.revokeStartedAt === member.revokeStartedAt &&
    equals(fields.assigned, member.assigned) &&
    equals(fields.pendingRevocation, member.pendingRevocation)
  ) {
    return member;
  }
  return {
    ...member,
    ...fields,
    memberEpoch: epoch,
    previousMemberEpoch: epochChanged ? member.memberEpoch : member.previousMemberEpoch,
  };
}
