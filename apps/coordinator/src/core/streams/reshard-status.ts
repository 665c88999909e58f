import type { ReshardingStatus } from '@redis-stream-coordinator/nestjs/protocol';
import { hasShard, type StreamRecord, waitedGroups } from './stream-record.js';

/**
 * The `resharding` part of the routing body (`GET /v1/streams/{stream}`): `null` when no reshard
 * runs, else its state, mode (and what the mode means for key order), the tracked and abandoned
 * groups, the waited-for groups that are idle (no subscribed member), and per old shard whether it is closed, which groups drained and released it, which
 * are still pending, and whether it was removed.
 */
export function reshardingStatus(
  record: StreamRecord,
  shardKey: (shard: number) => string,
): ReshardingStatus | null {
  const r = record.resharding;
  if (!r) return null;
  const waiting = waitedGroups(r);
  const closed = r.state === 'draining' || r.state === 'completing';
  return {
    state: r.state,
    mode: r.mode,
    keyOrder: r.mode === 'strict' ? 'kept' : 'not-guaranteed',
    fromShards: [...r.fromShards],
    toShards: [...r.toShards],
    startedAt: new Date(r.startedAt).toISOString(),
    groups: [...r.groups],
    abandonedGroups: Object.entries(r.abandoned)
      .map(([group, a]) => ({ group, reason: a.reason, at: new Date(a.at).toISOString() }))
      .sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : 0)),
    idleGroups: waiting
      .filter((g) => r.idleSince[g] !== undefined)
      .map((group) => ({ group, since: new Date(r.idleSince[group] as number).toISOString() })),
    drain: r.fromShards.map((shard) => {
      const drainedGroups = [...(r.drained[String(shard)] ?? [])];
      const removed = r.state !== 'preparing' && !hasShard(record, shard);
      return {
        shard,
        key: shardKey(shard),
        closed,
        drainedGroups,
        releasedGroups: [...(r.released[String(shard)] ?? [])],
        pendingGroups: removed ? [] : waiting.filter((g) => !drainedGroups.includes(g)),
        removed,
      };
    }),
  };
}
