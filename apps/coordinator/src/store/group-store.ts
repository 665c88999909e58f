import { randomUUID } from 'node:crypto';
import { groupEventEntry } from './event-entry.codec.js';
import { LAST_STREAM_ID } from './stream-ids.js';
import type { Cluster, Redis } from 'ioredis';
import type { GroupEventEntry, KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { runScript } from '@redis-stream-coordinator/nestjs/internal';
import { GroupState } from '../core/group-state.js';
import { redisTimeMs } from '../redis/redis-time.js';
import type { GroupTransaction, OwnershipChange } from '../core/group-transaction.js';
import {
  decodeMember,
  decodeMeta,
  decodePendingFences,
  encodePendingFences,
  type PendingFenceRecord,
  decodeTarget,
  encodeMember,
  encodeMeta,
  encodeTarget,
} from './group-records.js';
import {
  CLEAR_PENDING_FENCES_SCRIPT,
  COMMIT_SCRIPT,
  DELETE_GROUP_SCRIPT,
  SCAN_SCRIPT,
  TOUCH_SCRIPT,
} from './group-store.scripts.js';

export type { PendingFenceRecord } from './group-records.js';

/**
 * What a group's first commit writes for its `createdAt` in its events: the commit script puts the
 * Redis clock there (see `COMMIT_SCRIPT`).
 */
const CREATED_AT_PLACEHOLDER = -1;

type RedisClient = Redis | Cluster;

/** A group as loaded from Redis. */
export interface LoadedGroup {
  readonly state: GroupState;
  /** False when nothing was ever written for this group. */
  readonly exists: boolean;
  /** Version of the stream catalog the group's metadata signature was computed with. */
  readonly catalogVersion: number;
  /**
   * The fence writes of the current commit if they may not all have been written yet; re-applied
   * by whoever loads the group.
   */
  readonly pendingFences: PendingFenceRecord | null;
  /** The time (ms) of the Redis server holding the group, read with it. */
  readonly now: number;
}

/** What a commit writes besides the transaction's staged records. */
export interface CommitOptions {
  /** Record a heartbeat for this member (Redis clock). */
  readonly touch?: string;
  /**
   * Only commit if these members have not heartbeated since `cutoff` (expiry re-check) and, when
   * `seenAt` is given (what the scan that found them stale read), their last heartbeat's time is
   * still exactly that.
   */
  readonly staleSince?: ReadonlyArray<readonly [memberId: string, cutoff: number, seenAt?: number]>;
  readonly catalogVersion: number;
  /**
   * The fence writes this change implies, stored with it so they survive a crash between the
   * commit and the writes (the next loader re-applies them).
   */
  readonly fences?: readonly OwnershipChange[];
}

/** Result of a conditional write. */
export type WriteResult =
  | { readonly ok: true; readonly now: number; readonly version: number }
  | {
      readonly ok: false;
      readonly reason: 'conflict' | 'not-stale';
      readonly currentVersion: number;
    };

/** Result of a {@link GroupStore.commit}: on success, the identity of the new commit. */
export type CommitResult =
  | {
      readonly ok: true;
      readonly now: number;
      readonly version: number;
      /** The group's incarnation (set by Redis when this commit created the group). */
      readonly createdAt: number;
      readonly commitId: string;
    }
  | {
      readonly ok: false;
      readonly reason: 'conflict' | 'not-stale';
      readonly currentVersion: number;
    };

/** What the session timers read about one group per tick (see {@link GroupStore.scan}). */
export interface GroupScan {
  /** Redis clock, ms. */
  readonly now: number;
  readonly version: number;
  /** Earliest time a rebalance timeout can run out; `null`: nobody revoking; `undefined`: unknown. */
  readonly revokeDeadline: number | null | undefined;
  /** Members with no heartbeat for the timeout, and the time of their last one (Redis clock). */
  readonly stale: ReadonlyArray<{ readonly memberId: string; readonly seenAt: number }>;
}

/** Event-log retention. */
export interface EventRetention {
  readonly maxLen: number;
  /** When > 0, trim by age (MINID) instead of by length. */
  readonly maxAgeMs: number;
}

/**
 * Persists groups in Redis. Every change is one Lua call that checks the group version
 * (compare-and-set) and writes the member, target, meta, heartbeat and event-log records together
 * — all or nothing — so replicas never overwrite each other's updates.
 */
export class GroupStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: KeySpace,
    private readonly retention: EventRetention,
  ) {}

  private groupKeys(groupId: string): string[] {
    return [
      this.keys.groupMetaKey(groupId),
      this.keys.groupMembersKey(groupId),
      this.keys.groupTargetsKey(groupId),
      this.keys.groupSeenKey(groupId),
      this.keys.groupEventsKey(groupId),
    ];
  }

  /**
   * Loads a group (an empty, non-existing one when nothing was written), with the time of the
   * Redis server that holds it.
   */
  async load(groupId: string): Promise<LoadedGroup> {
    // One transaction, so the three hashes are of one commit and the time is of the server that
    // holds them (on Redis Cluster, the group's master: TIME has no key and goes with the rest).
    // Not a script: copying a large group's hashes through Lua cost Redis 3.6x the CPU of
    // HGETALL (a 1,000-member group: 2.0 against 0.55 ms per load).
    const replies = await this.redis
      .multi()
      .hgetall(this.keys.groupMetaKey(groupId))
      .hgetall(this.keys.groupMembersKey(groupId))
      .hgetall(this.keys.groupTargetsKey(groupId))
      .time()
      .exec();
    const [meta, members, targets, time] = transactionResults(replies, groupId) as [
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
      [string, string],
    ];
    const now = redisTimeMs(time);
    const decoded = decodeMeta(meta);
    if (!decoded) {
      return {
        state: GroupState.empty(groupId, now),
        exists: false,
        catalogVersion: 0,
        pendingFences: null,
        now,
      };
    }
    const state = GroupState.fromRecords(
      groupId,
      decoded.meta,
      Object.values(members).map(decodeMember),
      Object.entries(targets).map(([id, json]) => [id, decodeTarget(json)] as const),
    );
    return {
      state,
      exists: true,
      catalogVersion: decoded.catalogVersion,
      pendingFences: meta.pendingFences ? currentPending(decoded.meta, meta.pendingFences) : null,
      now,
    };
  }

  /** The group's current version (0 when it does not exist). */
  async version(groupId: string): Promise<number> {
    return Number((await this.redis.hget(this.keys.groupMetaKey(groupId), 'version')) ?? 0);
  }

  /**
   * True when `state` is still what Redis holds: same version and, for an existing group, same
   * incarnation (`createdAt`; versions restart after a group is deleted and created again) and
   * same commit (`commitId`; a version number can be reused after Redis lost writes).
   */
  async isCurrent(state: GroupState): Promise<boolean> {
    const [version, createdAt, commitId] = await this.redis.hmget(
      this.keys.groupMetaKey(state.groupId),
      'version',
      'createdAt',
      'commitId',
    );
    const current = Number(version ?? 0);
    if (current !== state.meta.version) return false;
    if (current === 0) return true;
    return (
      (createdAt === null || createdAt === String(state.meta.createdAt)) &&
      (commitId === null || commitId === state.meta.commitId)
    );
  }

  /**
   * Writes a transaction's changes if the group is still at the commit it was computed on. The
   * commit that creates the group takes its incarnation (`createdAt`) from the Redis clock.
   */
  async commit(txn: GroupTransaction, options: CommitOptions): Promise<CommitResult> {
    const expected = txn.base.meta.version;
    const creates = expected === 0;
    const commitId = randomUUID();
    const mset: Array<[string, string]> = [];
    const mdel: string[] = [];
    for (const id of txn.touchedMembers()) {
      const m = txn.members.get(id);
      if (m) mset.push([id, encodeMember(m)]);
      else if (txn.base.members.has(id)) mdel.push(id);
    }
    const tset: Array<[string, string]> = [];
    const tdel: string[] = [];
    for (const id of txn.targets.changedKeys()) {
      const t = txn.targets.get(id);
      if (t) tset.push([id, encodeTarget(t)]);
      else tdel.push(id);
    }
    const payload = {
      v: expected,
      c: String(txn.base.meta.createdAt),
      ci: txn.base.meta.commitId,
      nv: expected + 1,
      nci: commitId,
      meta: {
        ...encodeMeta(txn.meta, options.catalogVersion),
        revokeDeadline: revokeDeadline(txn),
      },
      ...(options.fences?.length
        ? {
            fences: encodePendingFences({
              incarnation: creates ? CREATED_AT_PLACEHOLDER : txn.meta.createdAt,
              version: expected + 1,
              changes: options.fences,
            }),
          }
        : {}),
      mset,
      mdel,
      tset,
      tdel,
      sdel: mdel,
      ...(options.touch ? { touch: options.touch } : {}),
      ...(options.staleSince?.length ? { stale: options.staleSince } : {}),
      events: [
        ...txn.events.map((e) => [e.type, txn.meta.groupEpoch, JSON.stringify(e.data)]),
        [
          'GROUP_STATE_CHANGED',
          txn.meta.groupEpoch,
          JSON.stringify(
            stateChange(
              txn,
              expected + 1,
              creates ? CREATED_AT_PLACEHOLDER : txn.meta.createdAt,
              mset,
              mdel,
              tset,
              tdel,
            ),
          ),
        ],
      ],
      maxlen: this.retention.maxLen,
      minAgeMs: this.retention.maxAgeMs,
      cpEvery: Math.max(1, Math.floor(this.retention.maxLen / 2)),
    };
    const [status, value, createdAt] = (await runScript(this.redis, COMMIT_SCRIPT, [
      ...this.groupKeys(txn.groupId),
      JSON.stringify(payload),
    ])) as [number, number, string | undefined];
    if (status === 1) {
      return {
        ok: true,
        now: value,
        version: expected + 1,
        createdAt: Number(createdAt),
        commitId,
      };
    }
    return { ok: false, reason: status === 0 ? 'conflict' : 'not-stale', currentVersion: value };
  }

  /**
   * Forgets the current commit's pending fence writes once they are all written (so that loading
   * the group does not write them again), unless another commit came since.
   */
  async clearPendingFences(groupId: string, commitId: string): Promise<void> {
    await runScript(this.redis, CLEAR_PENDING_FENCES_SCRIPT, [
      this.keys.groupMetaKey(groupId),
      commitId,
    ]);
  }

  /** Records a heartbeat that changed nothing, if the group is still as in `state` (same commit). */
  touch(state: GroupState, memberId: string): Promise<WriteResult> {
    return this.touchMany(state, [memberId]);
  }

  /**
   * Records heartbeats of several members that changed nothing, in one call, if the group is
   * still as in `state` (all or none). An empty list (or `['']`) only checks the commit.
   */
  async touchMany(state: GroupState, memberIds: readonly string[]): Promise<WriteResult> {
    const { version, createdAt, commitId } = state.meta;
    const [status, value] = (await runScript(this.redis, TOUCH_SCRIPT, [
      ...this.groupKeys(state.groupId),
      String(version),
      String(createdAt),
      commitId,
      ...memberIds,
    ])) as [number, number];
    if (status === 1) return { ok: true, now: value, version };
    return { ok: false, reason: 'conflict', currentVersion: value };
  }

  /**
   * Members with no heartbeat for `timeoutMs`, with the Redis clock, the group version and the
   * earliest rebalance deadline (`null`: nobody is revoking; `undefined`: not recorded).
   */
  async scan(groupId: string, timeoutMs: number): Promise<GroupScan> {
    const out = (await runScript(this.redis, SCAN_SCRIPT, [
      ...this.groupKeys(groupId),
      String(timeoutMs),
    ])) as Array<number | string>;
    const deadline = Number(out[2]);
    return {
      now: Number(out[0]),
      version: Number(out[1]),
      revokeDeadline: deadline === -1 ? null : deadline === -2 ? undefined : deadline,
      stale: Array.from({ length: Math.floor((out.length - 3) / 2) }, (_, k) => ({
        memberId: String(out[3 + 2 * k]),
        seenAt: Number(out[4 + 2 * k]),
      })),
    };
  }

  /** Last heartbeat time (Redis clock, ms) of every member. */
  async lastSeen(groupId: string): Promise<Map<string, number>> {
    const flat = await this.redis.zrange(this.keys.groupSeenKey(groupId), '0', '-1', 'WITHSCORES');
    const out = new Map<string, number>();
    for (let i = 0; i + 1 < flat.length; i += 2) out.set(flat[i] as string, Number(flat[i + 1]));
    return out;
  }

  /**
   * Deletes an empty group if it is still as in `state`: `deleted`, `conflict` or `not-empty`.
   * The group leaves the index of groups after its keys are gone (see {@link unindex}).
   */
  async deleteGroup(state: GroupState): Promise<'deleted' | 'conflict' | 'not-empty'> {
    const groupId = state.groupId;
    const r = (await runScript(this.redis, DELETE_GROUP_SCRIPT, [
      ...this.groupKeys(groupId),
      String(state.meta.version),
      String(state.meta.createdAt),
      state.meta.commitId,
    ])) as number;
    if (r === 1) {
      await this.unindex(groupId);
      return 'deleted';
    }
    return r === 0 ? 'conflict' : 'not-empty';
  }

  /**
   * Adds a group to the index of known groups (idempotent; true when it was not indexed). Called
   * after the commit that created
   * the group (and by the session timers for any existing group they find unindexed): the index
   * key lives in another slot than the group's keys, so it cannot be written by the group's
   * scripts on Redis Cluster.
   */
  async index(groupId: string): Promise<boolean> {
    return (await this.redis.sadd(this.keys.groupsIndexKey(), groupId)) === 1;
  }

  /**
   * Removes a deleted group from the index — unless it exists again: a create on another replica
   * may have committed (and indexed) between the deletion and the removal, so existence is checked
   * after the removal and the group re-indexed if it exists. With {@link index} running after
   * every creating commit, an existing group therefore always ends up indexed, whatever the
   * interleaving (a crash in between is repaired by the session timers).
   */
  async unindex(groupId: string): Promise<void> {
    await this.redis.srem(this.keys.groupsIndexKey(), groupId);
    if ((await this.redis.hexists(this.keys.groupMetaKey(groupId), 'version')) === 1) {
      await this.index(groupId);
    }
  }

  /** How many groups the index holds (`MAX_GROUPS` counts these). */
  async groupCount(): Promise<number> {
    return this.redis.scard(this.keys.groupsIndexKey());
  }

  /** Every known group id. */
  async listGroupIds(): Promise<string[]> {
    return (await this.redis.smembers(this.keys.groupsIndexKey())).sort();
  }

  /** A page of the group's event log, oldest first; `after` is exclusive. */
  async events(
    groupId: string,
    after: string | undefined,
    limit: number,
  ): Promise<GroupEventEntry[]> {
    // Redis refuses an exclusive start at the last possible id; nothing can follow it anyway.
    if (after === LAST_STREAM_ID) return [];
    const start = after ? `(${after}` : '-';
    const entries = await this.redis.xrange(
      this.keys.groupEventsKey(groupId),
      start,
      '+',
      'COUNT',
      limit,
    );
    return entries.map(([id, fields]) => groupEventEntry(id, fields));
  }
}

/**
 * Data of the `GROUP_STATE_CHANGED` entry every commit appends after its own events: the group
 * version it produced, the group-level fields, and the stored form of every member record and
 * target it wrote or deleted — so the event log alone is enough to rebuild the group
 * (`apps/coordinator/src/projections/`).
 */
function stateChange(
  txn: GroupTransaction,
  version: number,
  createdAt: number,
  mset: ReadonlyArray<readonly [string, string]>,
  mdel: readonly string[],
  tset: ReadonlyArray<readonly [string, string]>,
  tdel: readonly string[],
): StateChangeData {
  return {
    v: version,
    meta: {
      groupEpoch: txn.meta.groupEpoch,
      assignmentEpoch: txn.meta.assignmentEpoch,
      createdAt,
      metadataSignature: txn.meta.metadataSignature,
    },
    m: mset.map(([id, json]) => [id, json] as [string, string]),
    md: [...mdel],
    t: tset.map(([id, json]) => [id, json] as [string, string]),
    td: [...tdel],
  };
}

/** `data` of a `GROUP_STATE_CHANGED` event (stored record forms, see `group-records.ts`). */
export interface StateChangeData {
  /** The group version this change produced. */
  readonly v: number;
  readonly meta: {
    readonly groupEpoch: number;
    readonly assignmentEpoch: number;
    readonly createdAt: number;
    readonly metadataSignature: string;
  };
  /** Member records written: `[memberId, stored JSON]`. */
  readonly m: Array<[string, string]>;
  /** Member ids deleted. */
  readonly md: string[];
  /** Targets written: `[memberId, stored JSON]`. */
  readonly t: Array<[string, string]>;
  /** Targets deleted. */
  readonly td: string[];
}

/**
 * The earliest time (coordinator clock) a member of the group can hit its rebalance timeout, or ''
 * when nobody is revoking: lets the timers skip groups with nothing to check.
 */
function revokeDeadline(txn: GroupTransaction): string {
  let earliest = Number.POSITIVE_INFINITY;
  for (const [, m] of txn.members.entries()) {
    if (m.state === 'UNREVOKED_SHARDS' && m.revokeStartedAt !== null) {
      earliest = Math.min(earliest, m.revokeStartedAt + m.rebalanceTimeoutMs);
    }
  }
  return Number.isFinite(earliest) ? String(earliest) : '';
}

/**
 * The pending fence writes of a loaded group, stamped with its current commit — or `null` when the
 * stored record is of an older commit (written before commits without fence writes deleted it).
 */
function currentPending(meta: GroupState['meta'], stored: string): PendingFenceRecord | null {
  const record = decodePendingFences(stored);
  if (record.version !== meta.version) return null;
  return {
    incarnation: meta.createdAt,
    version: meta.version,
    commitId: meta.commitId,
    changes: record.changes,
  };
}

/** The results of a transaction's commands; throws the first command's error, if any. */
function transactionResults(
  replies: Array<[Error | null, unknown]> | null,
  groupId: string,
): unknown[] {
  if (replies === null) throw new Error(`loading group ${groupId}: the transaction was aborted`);
  return replies.map(([error, result]) => {
    if (error) throw error;
    return result;
  });
}
