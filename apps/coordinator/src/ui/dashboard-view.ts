import type {
  DescribedGroup,
  GroupEventEntry,
  ReshardingStatus,
  StreamRouting,
  StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { ShardLag } from './shard-lag.reader.js';
import { listTargetMoves } from '@redis-stream-coordinator/nestjs/protocol';

/** How one member relates to one shard, as the ownership grid shows it. */
export type ShardCell =
  /** In the member's assignment: it processes the shard. */
  | 'owned'
  /** Pending revocation: it must stop and release it. */
  | 'revoking'
  /** In its target, still held by another member (waits for the release). */
  | 'awaiting'
  /** In its target, free, not picked up yet (its next heartbeat takes it). */
  | 'pending';

/** One row of the ownership grid. */
export interface DashboardShard {
  readonly stream: string;
  readonly shard: number;
  /** The member holding it (assigned or revoking), or `null`. */
  readonly owner: string | null;
  /** memberId → relation, for members with one. */
  readonly cells: Record<string, ShardCell>;
  readonly lag: number | null;
  readonly pending: number | null;
  /** Closed for writes by a running reshard (drained, then removed). */
  readonly draining: boolean;
}

/** A rebalance-related event, summarised for the timeline. */
export interface TimelineEntry {
  readonly id: string;
  readonly at: string;
  readonly type: string;
  readonly groupEpoch: number;
  readonly summary: string;
}

/** Everything the dashboard shows about one group. */
export interface GroupDashboard {
  readonly group: DescribedGroup;
  /** Where the group view came from: the event-log projection, or the live records. */
  readonly source: 'projection' | 'live';
  /** Group version of the projection (when `source` is `projection`). */
  readonly version: number | null;
  readonly streams: ReadonlyArray<{
    stream: string;
    routingEpoch: number | null;
    resharding: ReshardingStatus | null;
  }>;
  readonly shards: readonly DashboardShard[];
  readonly timeline: readonly TimelineEntry[];
}

/** Event types that make up the rebalance timeline. */
export const TIMELINE_TYPES: ReadonlySet<string> = new Set([
  'MEMBER_JOINED',
  'MEMBER_REJOINED',
  'MEMBER_REPLACED',
  'MEMBER_LEFT',
  'MEMBER_LEFT_TEMPORARILY',
  'MEMBER_EXPIRED',
  'MEMBER_FENCED',
  'MEMBER_REMOVED',
  'GROUP_EPOCH_BUMPED',
  'TARGET_ASSIGNMENT_CHANGED',
  'ASSIGNOR_FALLBACK',
  'SHARDS_REVOKED',
  'SHARDS_RELEASED',
  'SHARDS_ASSIGNED',
]);

const has = (list: readonly StreamShards[], stream: string, shard: number): boolean =>
  list.some((e) => e.stream === stream && e.shards.includes(shard));

const shardText = (list: unknown): string =>
  Array.isArray(list)
    ? (list as StreamShards[]).map((e) => `${e.stream}:${e.shards.join(',')}`).join(' ') || '-'
    : '-';

/** A one-line summary of a timeline event. */
export function summarize(e: GroupEventEntry): string {
  const d = e.data;
  const member = typeof d.memberId === 'string' ? d.memberId : '';
  switch (e.type) {
    case 'TARGET_ASSIGNMENT_CHANGED': {
      const { listed, more } = listTargetMoves(d, 6);
      return `target epoch ${String(d.assignmentEpoch)} (${String(d.reason)}, ${String(d.assignor)}): ${String(d.moved)} shard(s) moved${listed.length ? ` — ${listed.join(', ')}` : ''}${more > 0 ? ` +${more}` : ''}`;
    }
    case 'GROUP_EPOCH_BUMPED':
      return `group epoch ${String(d.groupEpoch)} (${String(d.reason)})`;
    case 'ASSIGNOR_FALLBACK':
      return `assignor ${String(d.requested)} is not configured on this replica: target epoch ${String(d.assignmentEpoch)} used ${String(d.used)}`;
    case 'SHARDS_ASSIGNED':
      return `${member} assigned ${shardText(d.shards)}`;
    case 'SHARDS_REVOKED':
      return `${member} must revoke ${shardText(d.shards)}`;
    case 'SHARDS_RELEASED':
      return `${member} released ${shardText(d.shards)}`;
    case 'MEMBER_JOINED':
    case 'MEMBER_REJOINED':
    case 'MEMBER_REPLACED':
      return `${member} ${e.type === 'MEMBER_JOINED' ? 'joined' : e.type === 'MEMBER_REJOINED' ? 'rejoined' : `replaced ${String(d.replacedMemberId)}`}`;
    default:
      return `${member} ${e.type.replace('MEMBER_', '').toLowerCase().replace(/_/g, ' ')}${d.released ? `, released ${shardText(d.released)}` : ''}`;
  }
}

/**
 * The ownership grid: one row per shard of the streams the group subscribes to (plus any shard
 * a member still holds), one cell per member that owns, revokes, awaits or is due to pick it up.
 */
export function shardGrid(
  group: DescribedGroup,
  shardsByStream: ReadonlyMap<string, readonly number[]>,
  draining: ReadonlySet<string>,
): Array<Omit<DashboardShard, 'lag' | 'pending'>> {
  const rows = new Map<string, { stream: string; shard: number }>();
  const add = (stream: string, shard: number): void => {
    rows.set(`${stream}/${shard}`, { stream, shard });
  };
  for (const [stream, shards] of shardsByStream) for (const s of shards) add(stream, s);
  for (const m of group.members) {
    for (const list of [m.assignment, m.pendingRevocation, m.target])
      for (const e of list) for (const s of e.shards) add(e.stream, s);
  }
  const sorted = [...rows.values()].sort((a, b) =>
    a.stream === b.stream ? a.shard - b.shard : a.stream < b.stream ? -1 : 1,
  );
  return sorted.map(({ stream, shard }) => {
    const holder = group.members.find(
      (m) => has(m.assignment, stream, shard) || has(m.pendingRevocation, stream, shard),
    );
    const cells: Record<string, ShardCell> = {};
    for (const m of group.members) {
      if (has(m.assignment, stream, shard)) cells[m.memberId] = 'owned';
      else if (has(m.pendingRevocation, stream, shard)) cells[m.memberId] = 'revoking';
      else if (has(m.target, stream, shard)) cells[m.memberId] = holder ? 'awaiting' : 'pending';
    }
    return {
      stream,
      shard,
      owner: holder?.memberId ?? null,
      cells,
      draining: draining.has(`${stream}/${shard}`),
    };
  });
}

/** Per-stream routing info for the dashboard (reshard progress included). */
export function streamSummaries(
  subscribed: readonly string[],
  routing: ReadonlyMap<string, StreamRouting>,
): GroupDashboard['streams'] {
  return subscribed.map((stream) => {
    const r = routing.get(stream);
    return { stream, routingEpoch: r?.routingEpoch ?? null, resharding: r?.resharding ?? null };
  });
}

/** Attaches lag and pending to grid rows (same order as `lags`). */
export function withLag(
  rows: ReadonlyArray<Omit<DashboardShard, 'lag' | 'pending'>>,
  lags: readonly ShardLag[],
): DashboardShard[] {
  return rows.map((r, i) => ({
    ...r,
    lag: lags[i]?.lag ?? null,
    pending: lags[i]?.pending ?? null,
  }));
}
