import { routingFunctionFor, type RoutingFunction } from '@redis-stream-coordinator/nestjs/protocol';

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

/** Per-group progress of a running reshard. */
export interface ReshardRecord {
  readonly state: 'draining';
  readonly mode: 'strict' | 'relaxed';
  readonly fromShards: readonly number[];
  readonly toShards: readonly number[];
  readonly startedAt: number;
  /** Groups that consume the stream and whose drain the change waits for. */
  readonly groups: readonly string[];
  /** old shard id → groups that have handled and acked everything in it. */
  readonly drained: Readonly<Record<string, readonly string[]>>;
  /** old shard id → groups that no longer hold it (revoked after the drain). */
  readonly released: Readonly<Record<string, readonly string[]>>;
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

/**
 * The shards `group` may consume now. Outside a reshard: every shard. During one, per group:
 * an old (draining) shard until the group has drained it; a new shard once every parent is
 * drained by the group (strict mode) or at once (relaxed mode). A group the reshard does not wait
 * for (it subscribed after the change began) sees only the new shards.
 */
export function consumableShards(record: StreamRecord, group: string): number[] {
  const r = record.resharding;
  if (!r) return record.shards.map((s) => s.id);
  const tracked = r.groups.includes(group);
  const drained = (id: number): boolean => (r.drained[String(id)] ?? []).includes(group);
  const out: number[] = [];
  for (const s of record.shards) {
    if (s.state === 'draining') {
      if (tracked && !drained(s.id)) out.push(s.id);
    } else if (!tracked || r.mode === 'relaxed' || s.parents.every((p) => drained(p) || !hasShard(record, p))) {
      out.push(s.id);
    }
  }
  return out;
}

function hasShard(record: StreamRecord, id: number): boolean {
  return record.shards.some((s) => s.id === id);
}
