import type { ReshardEventType } from './streams/stream-record.js';

/** Event types appended to a group's event log (docs/protocol.md §14.2). */
export type GroupEventType =
  | 'GROUP_CREATED'
  | 'GROUP_DELETED'
  | 'MEMBER_JOINED'
  | 'MEMBER_REJOINED'
  | 'MEMBER_REPLACED'
  | 'MEMBER_UPDATED'
  | 'MEMBER_LEFT'
  | 'MEMBER_LEFT_TEMPORARILY'
  | 'MEMBER_EXPIRED'
  | 'MEMBER_FENCED'
  | 'MEMBER_REMOVED'
  | 'GROUP_EPOCH_BUMPED'
  | 'TARGET_ASSIGNMENT_CHANGED'
  | 'ASSIGNOR_FALLBACK'
  | 'MEMBER_EPOCH_CHANGED'
  | 'SHARDS_REVOKED'
  | 'SHARDS_RELEASED'
  | 'SHARDS_ASSIGNED'
  | ReshardEventType
  // Written by the store with every commit / periodically, not by the core: the stored records a
  // commit wrote, and a full snapshot of the group (event-log projections rebuild from them).
  | 'GROUP_STATE_CHANGED'
  | 'GROUP_CHECKPOINT';

/** One event produced by a change, before it is persisted (the store adds id and time). */
export interface GroupEvent {
  readonly type: GroupEventType;
  readonly data: Record<string, unknown>;
}

/** Why a member left, as recorded in events and assignment diffs. */
export type RemovalReason = 'leave' | 'expiry' | 'rebalance-timeout' | 'admin' | 'replaced';

/** Why the group epoch moved. */
export type BumpReason =
  'join' | 'leave' | 'expiry' | 'fence' | 'admin' | 'subscription' | 'metadata' | 'reshard';
