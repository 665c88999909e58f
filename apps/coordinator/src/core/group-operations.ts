import { type Assignment, EMPTY_ASSIGNMENT, toWire } from './assignment.js';
import type { CoordinatorRules } from './coordinator-rules.js';
import type { BumpReason, RemovalReason } from './group-event.js';
import type { GroupTransaction } from './group-transaction.js';
import type { StreamCatalog } from './stream-catalog.js';
import { maybeUpdateTarget, metadataChangeReason, metadataSignature } from './target-assignment.js';

const REMOVAL_EVENT = {
  leave: 'MEMBER_LEFT',
  expiry: 'MEMBER_EXPIRED',
  'rebalance-timeout': 'MEMBER_FENCED',
  admin: 'MEMBER_REMOVED',
  replaced: 'MEMBER_REPLACED',
} as const;

const REMOVAL_BUMP: Record<RemovalReason, BumpReason> = {
  leave: 'leave',
  expiry: 'expiry',
  'rebalance-timeout': 'fence',
  admin: 'admin',
  replaced: 'join',
};

/** Raises the group epoch by one (at most once per request) and records why. */
export function bumpGroupEpoch(txn: GroupTransaction, reason: BumpReason): void {
  if (txn.meta.groupEpoch > txn.base.meta.groupEpoch) return;
  txn.setMeta({ groupEpoch: txn.meta.groupEpoch + 1 });
  txn.emit('GROUP_EPOCH_BUMPED', { groupEpoch: txn.meta.groupEpoch, reason });
}

/**
 * Re-checks the subscribed streams' shard sets; a change (stream created, reshard step) bumps the
 * group epoch, as Kafka does when topic metadata changes. Returns why (`reshard` when a stream
 * whose view changed is being resharded, else `metadata`), or `null` when nothing changed.
 */
export function refreshMetadata(txn: GroupTransaction, catalog: StreamCatalog): BumpReason | null {
  const signature = metadataSignature(txn, catalog);
  const previous = txn.meta.metadataSignature;
  if (signature === previous) return null;
  const reason = metadataChangeReason(txn, catalog, previous);
  txn.setMeta({ metadataSignature: signature });
  bumpGroupEpoch(txn, reason);
  return reason;
}

/**
 * Removes a member for good (leave `-1`, session expiry, rebalance-timeout expiry, admin removal):
 * its shards are free at once, the group epoch goes up, and a new target is computed right away
 * so the remaining members can be nudged to pick the shards up.
 */
export function removeMember(
  txn: GroupTransaction,
  memberId: string,
  reason: RemovalReason,
  catalog: StreamCatalog,
  rules: CoordinatorRules,
): boolean {
  const removed = txn.removeMember(memberId);
  if (!removed) return false;
  const released: Assignment = removed.assigned;
  txn.emit(REMOVAL_EVENT[reason], {
    memberId,
    instanceId: removed.instanceId,
    reason,
    memberEpoch: removed.memberEpoch,
    released: toWire(released),
    pendingRevocation: toWire(removed.pendingRevocation),
  });
  bumpGroupEpoch(txn, REMOVAL_BUMP[reason]);
  refreshMetadata(txn, catalog);
  if (txn.members.size > 0) maybeUpdateTarget(txn, catalog, rules, REMOVAL_BUMP[reason], null);
  return true;
}

/**
 * A static member leaving for a while (`-2`): its assignment stays reserved (nobody else gets its
 * shards), shards it was revoking are released, no epoch bump, the session timer keeps running.
 * A repeated `-2` (a retried leave) changes nothing.
 */
export function leaveTemporarily(txn: GroupTransaction, memberId: string): void {
  const member = txn.members.get(memberId);
  if (!member || member.memberEpoch === -2) return;
  txn.putMember({
    ...member,
    memberEpoch: -2,
    previousMemberEpoch: member.memberEpoch,
    pendingRevocation: EMPTY_ASSIGNMENT,
    revokeStartedAt: null,
  });
  txn.emit('MEMBER_LEFT_TEMPORARILY', {
    memberId,
    instanceId: member.instanceId,
    reserved: toWire(member.assigned),
    released: toWire(member.pendingRevocation),
  });
}
