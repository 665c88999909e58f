import type {
  AssignedStreamShards,
  AssignmentDiff,
  HeartbeatRequest,
  HeartbeatResponse,
  LeaveResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  type Assignment,
  EMPTY_ASSIGNMENT,
  equals,
  filter,
  fromWire,
  isSubset,
  subtract,
  toWire,
  union,
} from './assignment.js';
import { CoordinatorError } from './coordinator-error.js';
import type { CoordinatorRules } from './coordinator-rules.js';
import { reconcileMember } from './current-assignment-builder.js';
import {
  bumpGroupEpoch,
  leaveTemporarily,
  refreshMetadata,
  removeMember,
} from './group-operations.js';
import type { GroupTransaction } from './group-transaction.js';
import {
  isReconciledTo,
  type MemberRecord,
  newMember,
  normaliseStreams,
  sameStreams,
} from './member.js';
import type { StreamCatalog } from './stream-catalog.js';
import { maybeUpdateTarget } from './target-assignment.js';

/** Everything a heartbeat needs besides the group. */
export interface HeartbeatContext {
  readonly rules: CoordinatorRules;
  readonly catalog: StreamCatalog;
  /** Address the request came from, shown as `clientHost`. */
  readonly clientHost: string | null;
}

/** Result of a heartbeat; the staged changes are in the transaction. */
export type HeartbeatOutcome =
  | { readonly kind: 'heartbeat'; readonly response: HeartbeatResponse; readonly memberId: string }
  | { readonly kind: 'leave'; readonly response: LeaveResponse; readonly memberId: string };

/** True when the request carries every field of a full heartbeat (docs/protocol.md §3.2). */
export function isFullRequest(req: HeartbeatRequest): boolean {
  return (
    req.rebalanceTimeoutMs !== undefined &&
    req.subscribedStreams !== undefined &&
    req.ownedShards !== undefined
  );
}

/**
 * Processes one heartbeat (join, rejoin, regular heartbeat or leave) against a group, per KIP-848
 * and docs/protocol.md §3–§4. The request is assumed to be shape-valid (checked at the HTTP edge);
 * this enforces the group-level rules. Throws {@link CoordinatorError} for protocol refusals, in
 * which case the transaction must be discarded. `groupExists` is false for a group never written.
 */
export function processHeartbeat(
  txn: GroupTransaction,
  groupExists: boolean,
  req: HeartbeatRequest,
  ctx: HeartbeatContext,
): HeartbeatOutcome {
  if (req.assignor !== undefined && !ctx.rules.assignors.has(req.assignor)) {
    throw new CoordinatorError(
      'UNSUPPORTED_ASSIGNOR',
      `assignor "${req.assignor}" is not configured; configured: ${[...ctx.rules.assignors.keys()].join(', ')}`,
    );
  }
  if (!groupExists && req.memberEpoch !== 0) {
    throw new CoordinatorError(
      'GROUP_ID_NOT_FOUND',
      `group "${txn.groupId}" does not exist; join with memberEpoch 0 to create it`,
    );
  }
  if (req.memberEpoch === -1 || req.memberEpoch === -2) return processLeave(txn, req, ctx);

  const { member, isNew, replaced } = findOrCreateMember(txn, req, ctx);
  const known = (a: Assignment): Assignment =>
    filter(a, (stream, shard) => ctx.catalog.knows(stream, shard));
  const owned = req.ownedShards === undefined ? undefined : known(fromWire(req.ownedShards));
  if (!isNew && replaced === null && req.memberEpoch !== 0) checkEpoch(member, req, owned);

  const before = member;
  let next = updateMetadata(member, req, ctx.clientHost);
  const subscriptionChanged = !sameStreams(before.subscribedStreams, next.subscribedStreams);
  if (isNew) {
    txn.emit(replaced === null ? 'MEMBER_JOINED' : 'MEMBER_REPLACED', {
      memberId: next.memberId,
      instanceId: next.instanceId,
      replacedMemberId: replaced,
      subscribedStreams: next.subscribedStreams,
    });
  } else if (req.memberEpoch === 0) {
    txn.emit('MEMBER_REJOINED', { memberId: next.memberId, memberEpoch: before.memberEpoch });
  }
  // A plain heartbeat that changes nothing must write nothing (docs/protocol.md §4.8).
  if (isNew || next !== before) txn.putMember(next);
  if ((isNew && replaced === null) || subscriptionChanged) {
    bumpGroupEpoch(txn, subscriptionChanged && !isNew ? 'subscription' : 'join');
  }
  const metadataReason = refreshMetadata(txn, ctx.catalog);
  maybeUpdateTarget(
    txn,
    ctx.catalog,
    ctx.rules,
    isNew ? 'join' : subscriptionChanged ? 'subscription' : (metadataReason ?? 'metadata'),
    next.memberId,
  );

  next = txn.members.get(next.memberId) as MemberRecord;
  const assignmentEpoch = txn.meta.assignmentEpoch;
  if (!isReconciledTo(next, assignmentEpoch)) {
    const target = txn.targets.get(next.memberId) ?? EMPTY_ASSIGNMENT;
    const reconciled = reconcileMember(next, assignmentEpoch, target, owned, {
      now: txn.now,
      ownerOf: (s, p) => txn.ownerOf(s, p),
    });
    if (reconciled !== next) {
      emitReconciliation(txn, next, reconciled);
      txn.putMember(reconciled);
      next = reconciled;
    }
  }

  // What the member holds as far as it knows: nothing after a join or rejoin (epoch 0: a member
  // rejoining dropped everything), else what it was last given (docs/protocol.md §3.4,
  // `diff.added`).
  const previouslyAssigned = req.memberEpoch === 0 ? EMPTY_ASSIGNMENT : before.assigned;
  const assignmentChanged = !equals(previouslyAssigned, next.assigned) || isNew;
  const includeAssignment = req.memberEpoch === 0 || isFullRequest(req) || assignmentChanged;
  const response: HeartbeatResponse = {
    memberId: next.memberId,
    memberEpoch: next.memberEpoch,
    heartbeatIntervalMs: ctx.rules.heartbeatIntervalMs,
    sessionTimeoutMs: ctx.rules.sessionTimeoutMs,
    ...(includeAssignment
      ? { assignment: { shards: wireAssignment(next.assigned, ctx.catalog) } }
      : {}),
    diff: diffFor(txn, next, subtract(next.assigned, previouslyAssigned)),
  };
  return { kind: 'heartbeat', response, memberId: next.memberId };
}

function processLeave(
  txn: GroupTransaction,
  req: HeartbeatRequest,
  ctx: HeartbeatContext,
): HeartbeatOutcome {
  const member = findExistingMember(txn, req);
  if (req.memberEpoch === -2) {
    leaveTemporarily(txn, member.memberId);
  } else {
    removeMember(txn, member.memberId, 'leave', ctx.catalog, ctx.rules);
  }
  return {
    kind: 'leave',
    response: { memberId: member.memberId, memberEpoch: req.memberEpoch },
    memberId: member.memberId,
  };
}

/** The member a non-join request refers to, with the static-membership checks. */
function findExistingMember(txn: GroupTransaction, req: HeartbeatRequest): MemberRecord {
  if (req.instanceId !== undefined) {
    const holder = txn.staticMemberId(req.instanceId);
    if (holder === undefined) {
      throw new CoordinatorError(
        'UNKNOWN_MEMBER_ID',
        `instance id "${req.instanceId}" is not a member of group "${txn.groupId}"; rejoin with memberEpoch 0`,
      );
    }
    if (holder !== req.memberId) {
      throw new CoordinatorError(
        'FENCED_INSTANCE_ID',
        `instance id "${req.instanceId}" belongs to member "${holder}", not "${req.memberId}"`,
      );
    }
  }
  const member = txn.members.get(req.memberId);
  if (!member) {
    throw new CoordinatorError(
      'UNKNOWN_MEMBER_ID',
      `member "${req.memberId}" is not in group "${txn.groupId}"; drop all shards and rejoin with memberEpoch 0`,
    );
  }
  return member;
}

function findOrCreateMember(
  txn: GroupTransaction,
  req: HeartbeatRequest,
  ctx: HeartbeatContext,
): { member: MemberRecord; isNew: boolean; replaced: string | null } {
  if (req.memberEpoch !== 0)
    return { member: findExistingMember(txn, req), isNew: false, replaced: null };

  const existing = txn.members.get(req.memberId);
  if (
    existing &&
    existing.memberEpoch !== -2 &&
    req.runId !== undefined &&
    existing.runId !== null &&
    existing.runId !== req.runId
  ) {
    // Another process joins under the id a live member holds (two processes given the same
    // fixed member id): refused until that member leaves or its session expires. The same
    // process rejoining after a fence sends its own run id and is let in.
    throw new CoordinatorError(
      'MEMBER_ID_IN_USE',
      `member id "${req.memberId}" is held by a live member of another process (run ${existing.runId}); give each process its own member id, or wait until that member leaves or its session expires`,
    );
  }
  if (req.instanceId !== undefined) {
    const holderId = txn.staticMemberId(req.instanceId);
    if (existing && existing.instanceId !== null && existing.instanceId !== req.instanceId) {
      throw new CoordinatorError(
        'FENCED_INSTANCE_ID',
        `member "${req.memberId}" is registered with instance id "${existing.instanceId}", not "${req.instanceId}"`,
      );
    }
    if (holderId !== undefined) {
      const holder = txn.members.get(holderId) as MemberRecord;
      if (holderId === req.memberId && holder.memberEpoch !== -2) {
        return { member: holder, isNew: false, replaced: null };
      }
      if (holder.memberEpoch !== -2) {
        throw new CoordinatorError(
          'UNRELEASED_INSTANCE_ID',
          `instance id "${req.instanceId}" is still held by live member "${holderId}"; it must leave (or expire) first`,
        );
      }
      return {
        member: replaceStaticMember(txn, holder, req.memberId),
        isNew: true,
        replaced: holderId,
      };
    }
  }
  if (existing) return { member: existing, isNew: false, replaced: null };
  if (txn.members.size >= ctx.rules.groupMaxSize) {
    throw new CoordinatorError(
      'GROUP_MAX_SIZE_REACHED',
      `group "${txn.groupId}" already has ${txn.members.size} members (GROUP_MAX_SIZE=${ctx.rules.groupMaxSize})`,
    );
  }
  return {
    member: newMember({ memberId: req.memberId, joinedAt: txn.now }),
    isNew: true,
    replaced: null,
  };
}

/**
 * A static member rejoining under a (possibly new) member id takes the old record over at once:
 * same shards, same target, epoch reset to 0 so reconciliation moves it to the current epoch.
 * When the new member id already names another (dynamic) member, that member is removed first
 * (its shards are free: it rejoined owning nothing) and the group epoch goes up, so its target is
 * handed out again.
 */
function replaceStaticMember(
  txn: GroupTransaction,
  old: MemberRecord,
  newMemberId: string,
): MemberRecord {
  if (newMemberId !== old.memberId && txn.removeMember(newMemberId)) bumpGroupEpoch(txn, 'join');
  const target = txn.targets.get(old.memberId);
  txn.removeMember(old.memberId);
  if (target) txn.targets.set(newMemberId, target);
  return {
    ...old,
    memberId: newMemberId,
    memberEpoch: 0,
    previousMemberEpoch: 0,
    state: 'STABLE',
    pendingRevocation: EMPTY_ASSIGNMENT,
    revokeStartedAt: null,
  };
}

/** Epoch fencing for an existing member (docs/protocol.md §4.4). */
function checkEpoch(
  member: MemberRecord,
  req: HeartbeatRequest,
  owned: Assignment | undefined,
): void {
  if (req.memberEpoch > member.memberEpoch) {
    throw new CoordinatorError(
      'FENCED_MEMBER_EPOCH',
      `memberEpoch ${req.memberEpoch} is ahead of the member's epoch ${member.memberEpoch}; drop all shards and rejoin with epoch 0`,
    );
  }
  if (req.memberEpoch < member.memberEpoch) {
    const lostResponse =
      req.memberEpoch === member.previousMemberEpoch &&
      owned !== undefined &&
      isSubset(owned, member.assigned);
    if (!lostResponse) {
      throw new CoordinatorError(
        'FENCED_MEMBER_EPOCH',
        `memberEpoch ${req.memberEpoch} is stale (member is at ${member.memberEpoch}); drop all shards and rejoin with epoch 0`,
      );
    }
  }
}

/** The member with the request's metadata applied; the same record when nothing changed. */
function updateMetadata(
  member: MemberRecord,
  req: HeartbeatRequest,
  clientHost: string | null,
): MemberRecord {
  const next: MemberRecord = {
    ...member,
    instanceId: req.instanceId ?? member.instanceId,
    rackId: req.rackId ?? member.rackId,
    clientHost: clientHost ?? member.clientHost,
    runId: req.runId ?? member.runId,
    subscribedStreams:
      req.subscribedStreams !== undefined
        ? normaliseStreams(req.subscribedStreams)
        : member.subscribedStreams,
    rebalanceTimeoutMs: req.rebalanceTimeoutMs ?? member.rebalanceTimeoutMs,
    assignor: req.assignor ?? member.assignor,
  };
  const unchanged =
    next.instanceId === member.instanceId &&
    next.rackId === member.rackId &&
    next.clientHost === member.clientHost &&
    next.runId === member.runId &&
    sameStreams(next.subscribedStreams, member.subscribedStreams) &&
    next.rebalanceTimeoutMs === member.rebalanceTimeoutMs &&
    next.assignor === member.assignor;
  return unchanged ? member : next;
}

function emitReconciliation(
  txn: GroupTransaction,
  before: MemberRecord,
  after: MemberRecord,
): void {
  const revoked = subtract(after.pendingRevocation, before.pendingRevocation);
  if (revoked.size > 0) {
    txn.emit('SHARDS_REVOKED', {
      memberId: after.memberId,
      shards: toWire(revoked),
      memberEpoch: after.memberEpoch,
    });
  }
  const released = subtract(
    union(before.assigned, before.pendingRevocation),
    union(after.assigned, after.pendingRevocation),
  );
  if (released.size > 0) {
    txn.emit('SHARDS_RELEASED', { memberId: after.memberId, shards: toWire(released) });
  }
  const added = subtract(after.assigned, before.assigned);
  if (added.size > 0) {
    txn.emit('SHARDS_ASSIGNED', {
      memberId: after.memberId,
      shards: toWire(added),
      memberEpoch: after.memberEpoch,
    });
  }
  if (after.memberEpoch !== before.memberEpoch || after.state !== before.state) {
    txn.emit('MEMBER_EPOCH_CHANGED', {
      memberId: after.memberId,
      memberEpoch: after.memberEpoch,
      previousMemberEpoch: before.memberEpoch,
      state: after.state,
    });
  }
}

function wireAssignment(assignment: Assignment, catalog: StreamCatalog): AssignedStreamShards[] {
  return toWire(assignment).map((e) => ({
    ...e,
    keys: e.shards.map((s) => catalog.shardKey(e.stream, s)),
  }));
}

function diffFor(txn: GroupTransaction, member: MemberRecord, added: Assignment): AssignmentDiff {
  const target = txn.targets.get(member.memberId) ?? EMPTY_ASSIGNMENT;
  const awaiting = filter(subtract(target, member.assigned), (stream, shard) => {
    const owner = txn.ownerOf(stream, shard);
    return owner !== undefined && owner !== member.memberId;
  });
  return {
    added: toWire(added),
    revoking: toWire(member.pendingRevocation),
    awaitingRelease: toWire(awaiting),
  };
}
