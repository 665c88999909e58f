import {
  routingFunctionFor,
  type RoutingFunction,
} from '@redis-stream-coordinator/nestjs/protocol';

/** Lifecycle of one shard of a stream. */
export type ShardLifecycle =
  /** Producers write to it; groups consume it. */
  | 'active'
  /** Closed for writes by a reshard; groups drain what is left. */
  | 'draining';

/** One shard of a stream. Ids are never reused: removed shards simply disappear from the list. */
export interface ShardRecord {
  readonly id: number;
  readonly state: ShardLifecycle;
  /** Shards of the previous layout that may hold earlier messages of this shard's keys. */
  readonly parents: readonly number[];
  readonly createdAt: number;
}

/**
 * Steps of a reshard, in order: `preparing` (requested; the new shard ids are reserved, nothing
 * else changed yet), `closing` (new layout published, new shards open, old shards being closed
 * for writes), `draining` (every old shard closed; groups drain them, drained shards are removed),
 * `completing` (every old shard removed; the last events are mirrored to the groups' logs). The
 * record's `resharding` becomes `null` once it is done.
 */
export type ReshardState = 'preparing' | 'closing' | 'draining' | 'completing';

/** How a new shard waits for its parents: `strict` keeps per-key order; `relaxed` does not wait. */
export type ReshardMode = 'strict' | 'relaxed';

/** Why a reshard stopped waiting for a tracked group. */
export interface AbandonedGroup {
  /**
   * `deleted`: the group no longer exists; `admin`: an admin abandoned it
   * (`POST /v1/streams/{stream}/groups/{group}/abandon`); `idle`: only in records written before
   * idle groups were kept (they were given up after `RESHARD_IDLE_GROUP_GRACE_MS`).
   */
  readonly reason: 'deleted' | 'admin' | 'idle';
  readonly at: number;
}

/** Event types of a reshard, in the stream's and the tracked groups' event logs. */
export type ReshardEventType =
  | 'RESHARD_REQUESTED'
  | 'RESHARD_STARTED'
  | 'RESHARD_SHARDS_CLOSED'
  | 'RESHARD_SHARD_DRAINED'
  | 'RESHARD_SHARD_RELEASED'
  | 'RESHARD_GROUP_TRACKED'
  | 'RESHARD_GROUP_IDLE'
  | 'RESHARD_GROUP_ABANDONED'
  | 'RESHARD_SHARD_REMOVED'
  | 'RESHARD_COMPLETED';

/** One step of a reshard as logged. Events about one group carry it in `data.group`. */
export interface ReshardEvent {
  /** 1, 2, 3, ... within one reshard. */
  readonly step: number;
  readonly type: ReshardEventType;
  readonly at: number;
  readonly data: Readonly<Record<string, unknown>>;
}

/** Per-group progress of a running reshard. */
export interface ReshardRecord {
  readonly state: ReshardState;
  readonly mode: ReshardMode;
  readonly fromShards: readonly number[];
  readonly toShards: readonly number[];
  readonly startedAt: number;
  /** Groups that consume the stream and whose drain the change waits for (set when the new layout is published). */
  readonly groups: readonly string[];
  /** old shard id → groups that have handled and acked everything in it. */
  readonly drained: Readonly<Record<string, readonly string[]>>;
  /** old shard id → groups that no longer hold it (revoked after the drain). */
  readonly released: Readonly<Record<string, readonly string[]>>;
  /** Tracked groups the change no longer waits for (they now see only the new shards). */
  readonly abandoned: Readonly<Record<string, AbandonedGroup>>;
  /** Tracked groups seen without any member subscribed to the stream, since when. */
  readonly idleSince: Readonly<Record<string, number>>;
  /**
   * Tracked groups that read this change in strict order whatever its mode: those without a
   * subscribed member when the layout was published, and those tracked late (absent in records
   * written before this field existed).
   */
  readonly strict?: readonly string[];
  /** Idle groups whose `RESHARD_GROUP_IDLE` was logged for their current idle period. */
  readonly idleReported?: readonly string[];
  /** Number of the last step taken (the last event's `step`). */
  readonly step: number;
  /** Steps not yet appended to every tracked group's event log (older ones are pruned). */
  readonly log: readonly ReshardEvent[];
  /** group → last step its event log accounts for. */
  readonly mirrored: Readonly<Record<string, number>>;
}

/** Everything the coordinator knows about a logical stream. */
export interface StreamRecord {
  readonly stream: string;
  /** +1 on every change of this record. */
  readonly version: number;
  /** +1 whenever the set of shards producers write to changes. */
  readonly routingEpoch: number;
  /** Next shard id to hand out (one past the highest id the stream ever had). */
  readonly nextShardId: number;
  readonly shards: readonly ShardRecord[];
  /** The layout producers write with: the active shards. */
  readonly routing: RoutingFunction;
  readonly resharding: ReshardRecord | null;
  readonly createdAt: number;
}

/** A new stream with shards `0…n-1`. */
export function newStreamRecord(stream: string, shards: number, now: number): StreamRecord {
  const ids = [...Array(shards).keys()];
  return {
    stream,
    version: 1,
    routingEpoch: 1,
    nextShardId: shards,
    shards: ids.map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
    routing: routingFunctionFor(ids),
    resharding: null,
    createdAt: now,
  };
}

/** Ids of the shards producers write to now. */
export function activeShardIds(record: StreamRecord): number[] {
  return record.shards.filter((s) => s.state === 'active').map((s) => s.id);
}

/** True when the running reshard waits for `group` (it was tracked and not abandoned). */
export function isWaitedFor(r: ReshardRecord, group: string): boolean {
  return r.groups.includes(group) && r.abandoned[group] === undefined;
}

/** The tracked groups the running reshard still waits for. */
export function waitedGroups(r: ReshardRecord): string[] {
  return r.groups.filter((g) => r.abandoned[g] === undefined);
}

/** True when `group` reads the running reshard in strict order (strict mode, or strict for it). */
export function readsStrict(r: ReshardRecord, group: string): boolean {
  return r.mode === 'strict' || (r.strict ?? []).includes(group);
}

/**
 * The shards `group` may consume now. Outside a reshard: every shard. During one, per group:
 * an old (draining) shard until the group has drained it; a new shard once every parent is
 * drained by the group (strict mode, or a group {@link readsStrict} for) or at once (relaxed
 * mode). A group the reshard does not wait for (it subscribed after the change began, or was
 * abandoned) sees only the new shards.
 */
export function consumableShards(record: StreamRecord, group: string): number[] {
  const r = record.resharding;
  if (!r) return record.shards.map((s) => s.id);
  const tracked = isWaitedFor(r, group);
  const strict = readsStrict(r, group);
  const drained = (id: number): boolean => (r.drained[String(id)] ?? []).includes(group);
  const out: number[] = [];
  for (const s of record.shards) {
    if (s.state === 'draining') {
      if (tracked && !drained(s.id)) out.push(s.id);
    } else if (!tracked || !strict || s.parents.every((p) => drained(p) || !hasShard(record, p))) {
      out.push(s.id);
    }
  }
  return out;
}

/** True when the stream has a shard `id` (active or draining). */
export function hasShard(record: StreamRecord, id: number): boolean {
  return record.shards.some((s) => s.id === id);
}
