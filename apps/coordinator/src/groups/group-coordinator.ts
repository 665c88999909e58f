import type {
  HeartbeatRequest,
  HeartbeatResponse,
  LeaveRequest,
  LeaveResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { has, pairs, union } from '../core/assignment.js';
import { CoordinatorError } from '../core/coordinator-error.js';
import type { CoordinatorRules } from '../core/coordinator-rules.js';
import type { GroupCoordinatorObserver } from '../core/group-coordinator-observer.js';
import type { GroupEvent } from '../core/group-event.js';
import { refreshMetadata, removeMember } from '../core/group-operations.js';
import type { GroupState } from '../core/group-state.js';
import { GroupTransaction, type OwnershipChange } from '../core/group-transaction.js';
import { isFullRequest, processHeartbeat } from '../core/heartbeat.js';
import { maybeUpdateTarget } from '../core/target-assignment.js';
import type { FenceStamp } from '../store/fence-stamp.js';
import type { FenceWriter } from '../store/fence-writer.js';
import { FenceWriteRefusedError } from '../store/fence-write-refused.error.js';
import type { GroupStore, PendingFenceRecord, WriteResult } from '../store/group-store.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import { KeyedQueue } from './keyed-queue.js';
import { TouchBatcher } from './touch-batcher.js';
import type { NudgePublisher } from './nudge-publisher.js';
import type { RedisClock } from '../store/redis-clock.js';

/** How often a request is recomputed after losing a compare-and-set race before giving up. */
const MAX_ATTEMPTS = 8;

/** A group as cached by this replica. */
interface CachedGroup {
  state: GroupState;
  exists: boolean;
  catalogVersion: number;
}

/**
 * What a timer-driven removal must still find true when it commits, so that a heartbeat racing
 * the timer wins: a session expiry only if the member has not heartbeated since `seenBefore`
 * (Redis clock; re-checked inside the commit script) and, when `seenAt` is given, only if its
 * last heartbeat's time is still the one the deciding scan read: a heartbeat timed below the
 * cutoff after a step back of the Redis clock changes it too (docs/protocol.md §4.6); a
 * rebalance-timeout removal only if the member is still in the very revocation that ran out
 * (same `revokeStartedAt`).
 */
export type ExpiryCondition =
  | {
      readonly reason: 'expiry';
      readonly seenBefore: number;
      /** The time of the member's last heartbeat as the scan that decided it read it. */
      readonly seenAt?: number;
    }
  | { readonly reason: 'rebalance-timeout'; readonly revokeStartedAt: number };

/** What one mutation returns to {@link GroupCoordinator.mutate}. */
interface MutationPlan<T> {
  readonly result: T;
  /** Record a heartbeat from this member. */
  readonly touch?: string;
  /**
   * Expiry re-check: commit only if these members have not heartbeated since the cutoff and, when
   * given, their last heartbeat's time is still the one the scan read.
   */
  readonly staleSince?: ReadonlyArray<readonly [string, number, number?]>;
  /** After committing, (re)write the fences of every shard this member holds. */
  readonly ensureFencesOf?: string;
}

/** How one {@link GroupCoordinator} attempt ended. */
type AttemptOutcome<T> =
  | { readonly kind: 'done'; readonly result: T }
  | { readonly kind: 'retry' }
  | {
      readonly kind: 'touch';
      readonly result: T;
      readonly version: number;
      readonly touched: Promise<WriteResult>;
    };

const RETRY = { kind: 'retry' } as const;

/**
 * Serves the group protocol on top of the pure core: per group, requests run one at a time in
 * this replica; each one is computed on a staged transaction over the cached state and persisted
 * with one compare-and-set Lua call. Losing the race to another replica reloads the group and
 * recomputes, so no update is ever lost and no decision is ever based on stale state. After a
 * commit, data-plane fences are written (before the response goes out) and waiting members are
 * nudged.
 */
export class GroupCoordinator {
  private readonly cache = new Map<string, CachedGroup>();
  private readonly queue = new KeyedQueue();
  /** The tail of the joins that may create a group (see {@link oneCreationAtATime}). */
  private creations: Promise<unknown> = Promise.resolve();
  private readonly touches: TouchBatcher;

  constructor(
    private readonly store: GroupStore,
    private readonly registry: StreamRegistry,
    private readonly fences: FenceWriter,
    private readonly nudger: NudgePublisher,
    readonly rules: CoordinatorRules,
    readonly clock: RedisClock,
    private readonly observer: GroupCoordinatorObserver = {},
  ) {
    this.touches = new TouchBatcher((state, memberIds) => this.store.touchMany(state, memberIds));
  }

  /** `POST /v1/groups/{groupId}/heartbeat`. */
  async heartbeat(
    groupId: string,
    req: HeartbeatRequest,
    clientHost: string | null,
  ): Promise<HeartbeatResponse | LeaveResponse> {
    const join = (): Promise<HeartbeatResponse | LeaveResponse> =>
      this.mutate(groupId, (txn, cached) => {
        const outcome = processHeartbeat(txn, cached.exists, req, {
          rules: this.rules,
          catalog: this.registry,
          clientHost,
        });
        if (outcome.kind === 'leave') return { result: outcome.response };
        return {
          result: outcome.response,
          touch: outcome.memberId,
          ...(isFullRequest(req) ? { ensureFencesOf: outcome.memberId } : {}),
        };
      });
    if (req.memberEpoch !== 0 || !(await this.mayCreate(groupId))) return join();
    return this.oneCreationAtATime(async () => {
      await this.admitGroup(groupId);
      return join();
    });
  }

  /** True when `MAX_GROUPS` is set and a join to `groupId` would create the group. */
  private async mayCreate(groupId: string): Promise<boolean> {
    if (this.rules.maxGroups === undefined || this.cache.get(groupId)?.exists) return false;
    return (await this.store.version(groupId)) === 0;
  }

  /**
   * Refuses a join that would create a group beyond `MAX_GROUPS` (docs/protocol.md §2.6). Runs in
   * {@link oneCreationAtATime}, so the count includes every group this replica created before;
   * replicas creating groups at the same moment may still overshoot by one group per other
   * replica. A join to an existing group is never refused.
   */
  private async admitGroup(groupId: string): Promise<void> {
    const max = this.rules.maxGroups;
    if (max === undefined) return;
    const count = await this.store.groupCount();
    // created meanwhile by another replica: a join like any other
    if (count < max || (await this.store.version(groupId)) > 0) return;
    throw new CoordinatorError(
      'MAX_GROUPS_REACHED',
      `group "${groupId}" would be group ${count + 1}; this coordinator holds at most ${max} groups (MAX_GROUPS): delete unused groups or raise MAX_GROUPS`,
    );
  }

  /**
   * Runs the joins that may create a group one after another (the creating commit indexes the
   * group before the next one counts): concurrent creations on one replica would otherwise all
   * read the same count and overshoot `MAX_GROUPS` by as many as arrive at once.
   */
  private oneCreationAtATime<T>(work: () => Promise<T>): Promise<T> {
    const result = this.creations.then(work);
    this.creations = result.catch(() => undefined);
    return result;
  }

  /** `POST /v1/groups/{groupId}/leave`: same as a `-1` (or `-2` when temporary) heartbeat. */
  async leave(groupId: string, body: LeaveRequest): Promise<LeaveResponse> {
    const response = await this.heartbeat(
      groupId,
      {
        memberId: body.memberId,
        memberEpoch: body.temporary === true ? -2 : -1,
        ...(body.instanceId !== undefined ? { instanceId: body.instanceId } : {}),
      },
      null,
    );
    return { memberId: response.memberId, memberEpoch: response.memberEpoch };
  }

  /** `DELETE /v1/groups/{groupId}/members/{memberId}`: removed as if it expired. */
  removeMemberByAdmin(groupId: string, memberId: string): Promise<void> {
    return this.mutate(groupId, (txn, cached) => {
      if (!cached.exists) {
        throw new CoordinatorError('GROUP_ID_NOT_FOUND', `group "${groupId}" does not exist`);
      }
      if (!removeMember(txn, memberId, 'admin', this.registry, this.rules)) {
        throw new CoordinatorError(
          'UNKNOWN_MEMBER_ID',
          `member "${memberId}" is not in group "${groupId}"`,
        );
      }
      return { result: undefined };
    });
  }

  /**
   * Removes a member whose session or rebalance timeout ran out (called by the timers), unless
   * `condition` no longer holds on the current state. Resolves `true` when the member was removed.
   */
  expire(groupId: string, memberId: string, condition: ExpiryCondition): Promise<boolean> {
    return this.mutate(groupId, (txn) => {
      const member = txn.members.get(memberId);
      if (!member) return { result: false };
      if (
        condition.reason === 'rebalance-timeout' &&
        (member.state !== 'UNREVOKED_SHARDS' ||
          member.revokeStartedAt !== condition.revokeStartedAt)
      ) {
        return { result: false };
      }
      removeMember(txn, memberId, condition.reason, this.registry, this.rules);
      return {
        result: true,
        ...(condition.reason === 'expiry'
          ? {
              staleSince: [
                condition.seenAt === undefined
                  ? ([memberId, condition.seenBefore] as const)
                  : ([memberId, condition.seenBefore, condition.seenAt] as const),
              ],
            }
          : {}),
      };
    }).catch((error: unknown) => {
      if (error instanceof StaleConditionError) return false;
      throw error;
    });
  }

  /** Re-evaluates a group after stream metadata changed (bumps its epoch, recomputes the target). */
  touchMetadata(groupId: string): Promise<void> {
    return this.recordStreamEvents(groupId, []);
  }

  /**
   * Appends stream-level events (reshard steps) to an existing group's event log and re-evaluates
   * the group in the same change, as {@link touchMetadata} does. A group that does not exist is
   * left alone (nothing is created).
   */
  recordStreamEvents(groupId: string, events: readonly GroupEvent[]): Promise<void> {
    return this.mutate(groupId, (txn, cached) => {
      if (!cached.exists) return { result: undefined };
      for (const event of events) txn.emit(event.type, event.data);
      if (txn.members.size > 0) {
        const reason = refreshMetadata(txn, this.registry);
        if (reason) maybeUpdateTarget(txn, this.registry, this.rules, reason, null);
      }
      return { result: undefined };
    });
  }

  /** `DELETE /v1/groups/{groupId}`: only an EMPTY group. */
  async deleteGroup(groupId: string): Promise<void> {
    await this.queue.run(groupId, async () => {
      for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        const cached = await this.get(groupId);
        // A refusal must be based on current state: another replica may have changed the group.
        if (
          (!cached.exists || cached.state.members.size > 0) &&
          (await this.isStale(groupId, cached))
        )
          continue;
        if (!cached.exists) {
          throw new CoordinatorError('GROUP_ID_NOT_FOUND', `group "${groupId}" does not exist`);
        }
        if (cached.state.members.size > 0) {
          throw new CoordinatorError(
            'GROUP_NOT_EMPTY',
            `group "${groupId}" still has ${cached.state.members.size} member(s); only an EMPTY group can be deleted`,
          );
        }
        const result = await this.store.deleteGroup(cached.state);
        if (result === 'deleted') {
          this.cache.delete(groupId);
          return;
        }
        this.cache.delete(groupId);
      }
      throw unavailable(groupId);
    });
  }

  /**
   * The committed state of a group, verified against Redis (reads are authoritative:
   * docs/protocol.md §6.3). Runs behind the group's queue so it sees every response already sent.
   */
  read(groupId: string): Promise<{ state: GroupState; exists: boolean }> {
    return this.queue.run(groupId, async () => {
      const cached = await this.get(groupId);
      if (!(await this.store.isCurrent(cached.state))) {
        this.cache.delete(groupId);
        const fresh = await this.get(groupId);
        return { state: fresh.state, exists: fresh.exists };
      }
      return { state: cached.state, exists: cached.exists };
    });
  }

  /** Groups this replica has cached (existing ones only; for metrics and the timers). */
  cachedGroups(): ReadonlyMap<string, { state: GroupState; exists: boolean }> {
    return this.cache;
  }

  /** Drops a group from the cache (its next request reloads it). */
  evict(groupId: string): void {
    this.cache.delete(groupId);
  }

  /**
   * Drops every cached group (after the Redis connection came back: Redis may have restarted
   * without its last writes, and nothing cached may be trusted over what it holds now).
   */
  dropCache(): void {
    this.cache.clear();
  }

  /**
   * The group, from the cache or loaded. Only existing groups are cached: a group that does not
   * exist is loaded again on every request (so a lookup of a random group id leaves nothing behind,
   * and a group another replica creates is seen at once).
   */
  private async get(groupId: string): Promise<CachedGroup> {
    let cached = this.cache.get(groupId);
    if (!cached) {
      const sentAt = this.clock.mark();
      const loaded = await this.store.load(groupId);
      // Before any time is stamped into the group: on Redis Cluster its master's clock may not be
      // the one this replica heard from last (docs/protocol.md §4.6). (Not kept for a group that
      // does not exist: a lookup of a random id leaves nothing behind.)
      if (loaded.exists) this.clock.observeGroup(groupId, loaded.now, { sentAt });
      else this.clock.observe(loaded.now);
      await this.registry.ensureAtLeast(loaded.catalogVersion);
      // The last change's fence writes may never have happened (its writer crashed, or Redis
      // failed in between): write them again; version order makes this safe in any case.
      if (loaded.pendingFences) await this.repairFences(groupId, loaded.pendingFences);
      cached = {
        state: loaded.state,
        exists: loaded.exists,
        catalogVersion: loaded.catalogVersion,
      };
      if (loaded.exists) this.cache.set(groupId, cached);
    }
    await this.registry.ensureAtLeast(cached.catalogVersion);
    return cached;
  }

  private async repairFences(groupId: string, pending: PendingFenceRecord): Promise<void> {
    const known = pending.changes.filter((c) => this.registry.knows(c.stream, c.shard));
    await this.fences.apply(groupId, known, pending, this.registry);
    await this.store.clearPendingFences(groupId, pending.commitId);
  }

  /**
   * Runs one state change: compute on a transaction, persist with compare-and-set, then fences and
   * nudges. A protocol error is only returned after checking the cache was current. A heartbeat
   * that changes nothing leaves the group's queue once computed and records itself through the
   * {@link TouchBatcher} (many heartbeats per Redis call); a lost compare-and-set recomputes it.
   */
  private async mutate<T>(
    groupId: string,
    plan: (txn: GroupTransaction, cached: CachedGroup) => MutationPlan<T>,
  ): Promise<T> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      // (Before the touch is sent: an early mark only makes the clock's jump check more lenient.)
      const sentAt = this.clock.mark();
      const outcome = await this.queue.run(groupId, () => this.attempt(groupId, plan));
      if (outcome.kind === 'done') return outcome.result;
      if (outcome.kind === 'retry') continue;
      const touched = await outcome.touched;
      if (touched.ok) {
        this.clock.observeGroup(groupId, touched.now, { sentAt });
        return outcome.result;
      }
      // Lost to a change: ours (the cache already moved on) or another replica's (reload).
      if (this.cache.get(groupId)?.state.meta.version === outcome.version) this.conflict(groupId);
      else this.observer.onConflict?.(groupId);
    }
    throw unavailable(groupId);
  }

  /** One attempt of {@link mutate}, inside the group's queue. */
  private async attempt<T>(
    groupId: string,
    plan: (txn: GroupTransaction, cached: CachedGroup) => MutationPlan<T>,
  ): Promise<AttemptOutcome<T>> {
    const sentAt = this.clock.mark();
    const cached = await this.get(groupId);
    const txn = new GroupTransaction(cached.state, this.clock.now(groupId));
    let step: MutationPlan<T>;
    try {
      step = plan(txn, cached);
    } catch (error) {
      if (error instanceof CoordinatorError && (await this.isStale(groupId, cached))) return RETRY;
      throw error;
    }
    if (!txn.dirty) {
      if (step.touch && !step.ensureFencesOf) {
        return {
          kind: 'touch',
          result: step.result,
          version: cached.state.meta.version,
          touched: this.touches.touch(cached.state, step.touch),
        };
      }
      await this.touches.drain(groupId);
      const touched = await this.store.touch(cached.state, step.touch ?? '');
      if (!touched.ok) {
        this.conflict(groupId);
        return RETRY;
      }
      this.clock.observeGroup(groupId, touched.now, { sentAt });
      try {
        await this.ensureFences(groupId, cached, step);
      } catch (error) {
        // Refused because the group changed meanwhile: recompute on the fresh state.
        if (await this.fencesSuperseded(groupId, cached.state, error)) return RETRY;
      }
      return { kind: 'done', result: step.result };
    }
    // Heartbeats answered before this change are recorded before it (a racing expiry loses).
    await this.touches.drain(groupId);
    // Read the staged changes before they are folded into the committed state.
    const ownership = txn.ownershipChanges();
    const written = await this.store.commit(txn, {
      ...(step.touch ? { touch: step.touch } : {}),
      ...(step.staleSince ? { staleSince: step.staleSince } : {}),
      catalogVersion: this.registry.version,
      fences: ownership,
    });
    if (!written.ok) {
      if (written.reason === 'not-stale') throw new StaleConditionError();
      this.conflict(groupId);
      return RETRY;
    }
    this.clock.observeGroup(groupId, written.now, { sentAt });
    const nudges = this.nudgeTargets(txn, ownership, step.touch);
    txn.commit(written.version, { createdAt: written.createdAt, commitId: written.commitId });
    const created = !cached.exists;
    cached.exists = true;
    cached.catalogVersion = this.registry.version;
    try {
      // After the creating commit (the index key is in another slot: see GroupStore.index).
      if (created) await this.store.index(groupId);
      this.cache.set(groupId, cached);
      await this.fences.apply(groupId, ownership, stampOf(cached.state), this.registry);
      if (ownership.length > 0) await this.store.clearPendingFences(groupId, written.commitId);
      await this.ensureFences(groupId, cached, step);
    } catch (error) {
      // Committed, but the fences may lag: reload next time, which re-applies them. Refused
      // because a later change decided meanwhile: that decision stands (the member hears of it at
      // its next heartbeat).
      if (!(await this.fencesSuperseded(groupId, cached.state, error))) throw error;
    }
    this.observer.onCommitted?.(groupId, txn);
    void this.nudger.nudge(groupId, nudges.now);
    if (nudges.soon.size > 0)
      this.nudger.nudgeSoon(groupId, nudges.soon, FREED_SHARDS_NUDGE_DELAY_MS);
    return { kind: 'done', result: step.result };
  }

  private async ensureFences(
    groupId: string,
    cached: CachedGroup,
    step: MutationPlan<unknown>,
  ): Promise<void> {
    if (!step.ensureFencesOf) return;
    const member = cached.state.members.get(step.ensureFencesOf);
    if (!member || member.memberEpoch < 0) return;
    await this.fences.ensure(
      groupId,
      member.memberId,
      pairs(union(member.assigned, member.pendingRevocation)),
      stampOf(cached.state),
      this.registry,
    );
  }

  /**
   * Members told to heartbeat: now, those the change gave work to (shards to revoke or to take)
   * and waiters for freed shards that wait for nothing else any more; soon (see
   * {@link FREED_SHARDS_NUDGE_DELAY_MS}), waiters for freed shards that still wait for shards
   * other members hold.
   */
  private nudgeTargets(
    txn: GroupTransaction,
    ownership: readonly OwnershipChange[],
    requester: string | undefined,
  ): { now: Set<string>; soon: Set<string> } {
    const now = new Set(txn.nudges);
    const soon = new Set<string>();
    const freed = ownership.filter((c) => c.to === null);
    if (freed.length > 0) {
      for (const [id, target] of txn.targets.entries()) {
        if (now.has(id) || !freed.some((c) => has(target, c.stream, c.shard))) continue;
        let stillHeld = false;
        for (const [stream, shard] of pairs(target)) {
          const owner = txn.ownerOf(stream, shard);
          if (owner !== undefined && owner !== id) {
            stillHeld = true;
            break;
          }
        }
        (stillHeld ? soon : now).add(id);
      }
    }
    if (requester !== undefined) {
      now.delete(requester);
      soon.delete(requester);
    }
    return { now, soon };
  }

  /**
   * After a fence write failed: drops the cached group (its next load re-applies the pending
   * writes) and tells whether the failure is a refusal because the group changed meanwhile (its
   * state is no longer the committed one: a later decision overrules the write). Any other
   * failure — and a refusal at the group's current commit, which means the data plane holds a
   * decision the group state does not know (Redis lost writes, or a bug) — is thrown, and so
   * answered with an error and logged, never ignored.
   */
  private async fencesSuperseded(
    groupId: string,
    state: GroupState,
    error: unknown,
  ): Promise<boolean> {
    this.cache.delete(groupId);
    if (!(error instanceof FenceWriteRefusedError)) throw error;
    if (await this.store.isCurrent(state)) throw error;
    this.observer.onConflict?.(groupId);
    return true;
  }

  private async isStale(groupId: string, cached: CachedGroup): Promise<boolean> {
    if (await this.store.isCurrent(cached.state)) return false;
    this.conflict(groupId);
    return true;
  }

  private conflict(groupId: string): void {
    this.cache.delete(groupId);
    this.observer.onConflict?.(groupId);
  }
}

/**
 * How long a member waiting for shards that several members release is left to wait for the
 * rest before it is nudged with what is free so far (it is nudged at once when the last one is
 * free). Releases answering one nudge land within a few tens of milliseconds.
 */
export const FREED_SHARDS_NUDGE_DELAY_MS = 50;

/** A conditional expiry lost to a heartbeat that arrived meanwhile. */
class StaleConditionError extends Error {
  override readonly name = 'StaleConditionError';
}

/** The stamp of fence writes made for the committed state `state`. */
function stampOf(state: GroupState): FenceStamp {
  return {
    incarnation: state.meta.createdAt,
    version: state.meta.version,
    commitId: state.meta.commitId,
  };
}

function unavailable(groupId: string): CoordinatorError {
  return new CoordinatorError(
    'COORDINATOR_NOT_AVAILABLE',
    `group "${groupId}" is being changed concurrently by other coordinator replicas; retry`,
  );
}
