import { fromRecord, toRecord, type Assignment } from '../core/assignment.js';
import type { GroupMeta } from '../core/group-state.js';
import type { OwnershipChange } from '../core/group-transaction.js';
import type { MemberRecord } from '../core/member.js';

/**
 * JSON forms of the core's records as stored in Redis hashes. Short, stable field names; a record
 * written by this version is read back identically (round-trip tested).
 */
interface StoredMember {
  id: string;
  iid: string | null;
  rack: string | null;
  host: string | null;
  subs: string[];
  rto: number;
  asg: string | null;
  ep: number;
  pep: number;
  st: MemberRecord['state'];
  a: Record<string, number[]>;
  pr: Record<string, number[]>;
  rs: number | null;
  j: number;
  /** Absent in records written before run ids. */
  run?: string;
}

/** Serialises a member record for the `members` hash. */
export function encodeMember(m: MemberRecord): string {
  const stored: StoredMember = {
    id: m.memberId,
    iid: m.instanceId,
    rack: m.rackId,
    host: m.clientHost,
    ...(m.runId !== null ? { run: m.runId } : {}),
    subs: [...m.subscribedStreams],
    rto: m.rebalanceTimeoutMs,
    asg: m.assignor,
    ep: m.memberEpoch,
    pep: m.previousMemberEpoch,
    st: m.state,
    a: toRecord(m.assigned),
    pr: toRecord(m.pendingRevocation),
    rs: m.revokeStartedAt,
    j: m.joinedAt,
  };
  return JSON.stringify(stored);
}

/** Inverse of {@link encodeMember}. */
export function decodeMember(json: string): MemberRecord {
  const s = JSON.parse(json) as StoredMember;
  return {
    memberId: s.id,
    instanceId: s.iid,
    rackId: s.rack,
    clientHost: s.host,
    runId: s.run ?? null,
    subscribedStreams: s.subs,
    rebalanceTimeoutMs: s.rto,
    assignor: s.asg,
    memberEpoch: s.ep,
    previousMemberEpoch: s.pep,
    state: s.st,
    assigned: fromRecord(s.a),
    pendingRevocation: fromRecord(s.pr),
    revokeStartedAt: s.rs,
    joinedAt: s.j,
  };
}

/** Serialises a target assignment for the `targets` hash. */
export function encodeTarget(a: Assignment): string {
  return JSON.stringify(toRecord(a));
}

/** Inverse of {@link encodeTarget}. */
export function decodeTarget(json: string): Assignment {
  return fromRecord(JSON.parse(json) as Record<string, number[]>);
}

/** Group meta as stored in the `meta` hash (all values strings). */
export function encodeMeta(meta: GroupMeta, catalogVersion: number): Record<string, string> {
  return {
    groupEpoch: String(meta.groupEpoch),
    assignmentEpoch: String(meta.assignmentEpoch),
    metadataSignature: meta.metadataSignature,
    createdAt: String(meta.createdAt),
    catalogVersion: String(catalogVersion),
  };
}

/** Inverse of {@link encodeMeta}; `null` when the hash is empty (group never written). */
export function decodeMeta(
  hash: Record<string, string>,
): { meta: GroupMeta; catalogVersion: number } | null {
  if (hash.version === undefined) return null;
  return {
    meta: {
      groupEpoch: Number(hash.groupEpoch ?? 0),
      assignmentEpoch: Number(hash.assignmentEpoch ?? 0),
      version: Number(hash.version),
      metadataSignature: hash.metadataSignature ?? '',
      createdAt: Number(hash.createdAt ?? 0),
      commitId: hash.commitId ?? '',
    },
    catalogVersion: Number(hash.catalogVersion ?? 0),
  };
}

/**
 * Serialises the fence writes of a change (`{i, v, c: [[stream, shard, from, to], …]}`); they are
 * stamped with the commit that stores them (its incarnation and identity are in the same hash).
 * `i` is only for replicas of earlier releases, which read the incarnation from here (a group's
 * first commit, whose incarnation Redis sets, writes -1: older than any real one, so such a replica
 * can never order a write above the real decisions).
 */
export function encodePendingFences(
  p: Pick<PendingFenceRecord, 'incarnation' | 'version' | 'changes'>,
): string {
  return JSON.stringify({
    i: p.incarnation,
    v: p.version,
    c: p.changes.map((c) => [c.stream, c.shard, c.from, c.to]),
  });
}

/** Inverse of {@link encodePendingFences}. */
export function decodePendingFences(json: string): Pick<PendingFenceRecord, 'version' | 'changes'> {
  const s = JSON.parse(json) as {
    v: number;
    c: Array<[string, number, string | null, string | null]>;
  };
  return {
    version: s.v,
    changes: s.c.map(([stream, shard, from, to]) => ({ stream, shard, from, to })),
  };
}

/** The fence writes one committed change implies, as stored with it. */
export interface PendingFenceRecord {
  /** The group's `createdAt` (orders decisions across a deletion and re-creation of the group). */
  readonly incarnation: number;
  /** The group version that made the decisions. */
  readonly version: number;
  /** The identity of that commit (`''` for a group written before commits had one). */
  readonly commitId: string;
  readonly changes: readonly OwnershipChange[];
}
