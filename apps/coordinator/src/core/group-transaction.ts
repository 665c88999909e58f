import { type Assignment, pairs, shardRef, union } from './assignment.js';
import type { GroupEvent } from './group-event.js';
import type { GroupMeta, GroupState, ShardOwner } from './group-state.js';
import type { MemberRecord } from './member.js';
import { OverlayMap } from './overlay-map.js';

/** A change of a shard's owner, for the data-plane fence. `to: null` = released. */
export interface OwnershipChange {
  readonly stream: string;
  readonly shard: number;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * The changes one request makes to a group, staged on top of the committed {@link GroupState}.
 * Reads see the staged changes; the committed state is untouched until {@link commit}, which the
 * service calls only after the changes were persisted. Keeps the owner index consistent and
 * refuses (throws) any change that would give one shard two owners.
 */
export class GroupTransaction {
  readonly members: OverlayMap<string, MemberRecord>;
  readonly targets: OverlayMap<string, Assignment>;
  private readonly owners: OverlayMap<string, ShardOwner>;
  private readonly staticMembers: OverlayMap<string, string>;
  private readonly subscriptionCounts: OverlayMap<string, number>;
  private readonly touched = new Set<string>();
  readonly events: GroupEvent[] = [];
  /** Members to nudge (tell to heartbeat now) once the change is committed. */
  readonly nudges = new Set<string>();
  /** Assignor runs made by this change (for metrics). */
  readonly assignorRuns: Array<{ assignor: string; ms: number }> = [];
  meta: GroupMeta;
  private metaDirty = false;

  constructor(
    readonly base: GroupState,
    readonly now: number,
  ) {
    this.members = new OverlayMap(base.members);
    this.targets = new OverlayMap(base.targets);
    this.owners = new OverlayMap(base.owners);
    this.staticMembers = new OverlayMap(base.staticMembers);
    this.subscriptionCounts = new OverlayMap(base.subscriptionCounts);
    this.meta = base.meta;
  }

  get groupId(): string {
    return this.base.groupId;
  }

  /** Replaces group-level fields. */
  setMeta(patch: Partial<Omit<GroupMeta, 'version' | 'commitId'>>): void {
    const next = { ...this.meta, ...patch };
    if (
      next.groupEpoch !== this.meta.groupEpoch ||
      next.assignmentEpoch !== this.meta.assignmentEpoch ||
      next.metadataSignature !== this.meta.metadataSignature ||
      next.createdAt !== this.meta.createdAt
    ) {
      this.meta = next;
      this.metaDirty = true;
    }
  }

  /** Appends an event to be persisted with the change. */
  emit(type: GroupEvent['type'], data: Record<string, unknown>): void {
    this.events.push({ type, data });
  }

  /** The current owner of a shard, or `undefined` when it is free. */
  ownerOf(stream: string, shard: number): string | undefined {
    return this.owners.get(shardRef(stream, shard))?.memberId;
  }

  /** The member holding `instanceId`, if any. */
  staticMemberId(instanceId: string): string | undefined {
    return this.staticMembers.get(instanceId);
  }

  /** Streams at least one member subscribes to, sorted. */
  subscribedStreams(): string[] {
    return [...this.subscriptionCounts.entries()].map(([s]) => s).sort();
  }

  /** Inserts or replaces a member record, keeping every index in step. */
  putMember(next: MemberRecord): void {
    const prev = this.members.get(next.memberId);
    this.reindex(prev, next);
    this.members.set(next.memberId, next);
    this.touched.add(next.memberId);
  }

  /** Deletes a member and its target, freeing every shard it held. */
  removeMember(memberId: string): MemberRecord | undefined {
    const prev = this.members.get(memberId);
    if (!prev) return undefined;
    this.reindex(prev, undefined);
    this.members.delete(memberId);
    this.targets.delete(memberId);
    this.touched.add(memberId);
    return prev;
  }

  private reindex(prev: MemberRecord | undefined, next: MemberRecord | undefined): void {
    const id = (next ?? prev)?.memberId as string;
    if (prev?.instanceId && this.staticMembers.get(prev.instanceId) === id) {
      this.staticMembers.delete(prev.instanceId);
    }
    if (next?.instanceId) this.staticMembers.set(next.instanceId, id);
    const before = prev?.subscribedStreams ?? [];
    const after = next?.subscribedStreams ?? [];
    for (const s of before) if (!after.includes(s)) this.bumpCount(s, -1);
    for (const s of after) if (!before.includes(s)) this.bumpCount(s, +1);
    const held = (m: MemberRecord | undefined): Assignment =>
      m ? union(m.assigned, m.pendingRevocation) : new Map();
    const oldHeld = held(prev);
    const newHeld = held(next);
    for (const [stream, shard] of pairs(oldHeld)) {
      const ref = shardRef(stream, shard);
      if (this.owners.get(ref)?.memberId === id) this.owners.delete(ref);
    }
    for (const [stream, shard] of pairs(newHeld)) {
      const ref = shardRef(stream, shard);
      const owner = this.owners.get(ref);
      if (owner && owner.memberId !== id) {
        throw new Error(
          `invariant violated in group ${this.groupId}: shard ${stream}/${shard} given to ${id} while ${owner.memberId} still holds it`,
        );
      }
      this.owners.set(ref, { stream, shard, memberId: id });
    }
  }

  private bumpCount(stream: string, delta: number): void {
    const n = (this.subscriptionCounts.get(stream) ?? 0) + delta;
    if (n <= 0) this.subscriptionCounts.delete(stream);
    else this.subscriptionCounts.set(stream, n);
  }

  /** True when anything that must be persisted changed. */
  get dirty(): boolean {
    return this.metaDirty || this.members.dirty || this.targets.dirty || this.events.length > 0;
  }

  /** Member ids whose record was written or deleted. */
  touchedMembers(): ReadonlySet<string> {
    return this.touched;
  }

  /** Every shard whose owner differs from the committed state. */
  ownershipChanges(): OwnershipChange[] {
    const out: OwnershipChange[] = [];
    for (const ref of this.owners.changedKeys()) {
      const before = this.owners.getBase(ref);
      const after = this.owners.get(ref);
      if (before?.memberId === after?.memberId) continue;
      const where = (after ?? before) as ShardOwner;
      out.push({
        stream: where.stream,
        shard: where.shard,
        from: before?.memberId ?? null,
        to: after?.memberId ?? null,
      });
    }
    return out;
  }

  /**
   * Applies the staged changes to the committed state (after they were persisted): the version and
   * the commit's identity as written, and the incarnation Redis set when this commit created the
   * group.
   */
  commit(
    version: number,
    identity?: { readonly createdAt: number; readonly commitId: string },
  ): void {
    this.members.commit();
    this.targets.commit();
    this.owners.commit();
    this.staticMembers.commit();
    this.subscriptionCounts.commit();
    this.base.meta = { ...this.meta, ...identity, version };
  }
}
