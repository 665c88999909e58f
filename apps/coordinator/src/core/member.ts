import type { MemberStateName } from '@redis-stream-coordinator/nestjs/protocol';
import { type Assignment, EMPTY_ASSIGNMENT } from './assignment.js';

/**
 * The coordinator's record of one member: metadata sent by the member, its epochs, its
 * reconciliation state and its current assignment (what it may process now plus what it must
 * still revoke). Immutable: every change produces a new record.
 */
export interface MemberRecord {
  readonly memberId: string;
  readonly instanceId: string | null;
  readonly rackId: string | null;
  readonly clientHost: string | null;
  /** The member process's run id (`runId` of its join), or `null` for a member that sent none. */
  readonly runId: string | null;
  /** Sorted, duplicate-free. */
  readonly subscribedStreams: readonly string[];
  readonly rebalanceTimeoutMs: number;
  /** Preferred server-side assignor, or `null` for "no preference". */
  readonly assignor: string | null;
  /** `0` only before the first reconciliation; `-2` while a static member is away. */
  readonly memberEpoch: number;
  readonly previousMemberEpoch: number;
  readonly state: MemberStateName;
  /** Shards the member may process now. */
  readonly assigned: Assignment;
  /** Shards the member was told to revoke and has not acknowledged yet. */
  readonly pendingRevocation: Assignment;
  /** When the member entered UNREVOKED_SHARDS (coordinator clock, ms), else `null`. */
  readonly revokeStartedAt: number | null;
  /** When the member first joined (coordinator clock, ms). */
  readonly joinedAt: number;
}

/** A fresh member record before its first reconciliation. */
export function newMember(
  fields: Pick<MemberRecord, 'memberId' | 'joinedAt'> & Partial<MemberRecord>,
): MemberRecord {
  return {
    instanceId: null,
    rackId: null,
    clientHost: null,
    runId: null,
    subscribedStreams: [],
    rebalanceTimeoutMs: 0,
    assignor: null,
    memberEpoch: 0,
    previousMemberEpoch: 0,
    state: 'STABLE',
    assigned: EMPTY_ASSIGNMENT,
    pendingRevocation: EMPTY_ASSIGNMENT,
    revokeStartedAt: null,
    ...fields,
  };
}

/** True when the member is STABLE at `epoch` (Kafka's `isReconciledTo`). */
export function isReconciledTo(member: MemberRecord, epoch: number): boolean {
  return member.state === 'STABLE' && member.memberEpoch === epoch;
}

/** Normalises a subscription list: sorted, duplicate-free. */
export function normaliseStreams(streams: readonly string[]): string[] {
  return [...new Set(streams)].sort();
}

/** True when two normalised subscription lists are equal. */
export function sameStreams(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
