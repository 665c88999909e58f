import type {
  AssignedStreamShards,
  HeartbeatRequest,
  HeartbeatResponse,
  ProtocolErrorCode,
  StreamShards,
} from '../protocol/index.js';
import { FATAL_ERROR_CODES, REJOIN_ERROR_CODES } from '../protocol/index.js';

/** One shard this member was granted: where to read it. */
export interface GrantedShard {
  readonly stream: string;
  readonly shard: number;
  readonly key: string;
}

/** A stable id of a shard within one member. */
export function shardId(stream: string, shard: number): string {
  return `${stream}\u0000${shard}`;
}

/** What the member sends on a join (and every full request). */
export interface MembershipSettings {
  readonly memberId: string;
  readonly subscribedStreams: readonly string[];
  readonly rebalanceTimeoutMs: number;
  readonly instanceId?: string;
  readonly rackId?: string;
  readonly assignor?: string;
  /** This run's random id (docs/protocol.md §7): a join under a member id held by another run is refused. */
  readonly runId?: string;
}

/** How the runtime must react to a failed heartbeat. */
export type HeartbeatFailure =
  /** Drop every shard as lost and rejoin at once with epoch 0 (fenced, unknown member). */
  | 'rejoin'
  /** The request cannot succeed as is (bad config, instance id held, group full): back off. */
  | 'fatal'
  /** Transient (coordinator unavailable, network): keep the shards, retry with a full request. */
  | 'retry';

/** Classifies a protocol error code (or `null` for a network failure / timeout). */
export function classifyFailure(code: ProtocolErrorCode | null): HeartbeatFailure {
  if (code === null) return 'retry';
  if (REJOIN_ERROR_CODES.has(code)) return 'rejoin';
  if (FATAL_ERROR_CODES.has(code)) return 'fatal';
  return 'retry';
}

/**
 * The member side of the heartbeat protocol, free of I/O: epoch, the granted assignment, and which
 * request to send next (full after a join or any error, docs/protocol.md §3.2). The runtime feeds
 * it what it really owns (shards whose readers have not settled yet count as owned) and applies the
 * assignment it returns.
 */
export class Membership {
  private epoch = 0;
  private full = true;
  private granted = new Map<string, GrantedShard>();
  private interval: number | null = null;
  private session: number | null = null;

  constructor(readonly settings: MembershipSettings) {}

  get memberId(): string {
    return this.settings.memberId;
  }

  get memberEpoch(): number {
    return this.epoch;
  }

  /** The heartbeat interval the coordinator asked for (until the first response: `null`). */
  get heartbeatIntervalMs(): number | null {
    return this.interval;
  }

  /** The session timeout the coordinator announced (until the first response: `null`). */
  get sessionTimeoutMs(): number | null {
    return this.session;
  }

  /** The shards the coordinator currently lets this member process. */
  assignment(): ReadonlyMap<string, GrantedShard> {
    return this.granted;
  }

  /** Builds the next heartbeat; `owned` is every shard this member still holds. */
  nextRequest(owned: readonly GrantedShard[]): HeartbeatRequest {
    const ownedShards = groupByStream(owned);
    if (this.epoch === 0) {
      return { ...this.fullFields(), memberId: this.memberId, memberEpoch: 0, ownedShards: [] };
    }
    if (this.full) {
      return {
        ...this.fullFields(),
        memberId: this.memberId,
        memberEpoch: this.epoch,
        ownedShards,
      };
    }
    return { memberId: this.memberId, memberEpoch: this.epoch, ownedShards };
  }

  private fullFields(): Omit<HeartbeatRequest, 'memberId' | 'memberEpoch' | 'ownedShards'> {
    const s = this.settings;
    return {
      rebalanceTimeoutMs: s.rebalanceTimeoutMs,
      subscribedStreams: [...s.subscribedStreams],
      ...(s.instanceId !== undefined ? { instanceId: s.instanceId } : {}),
      ...(s.rackId !== undefined ? { rackId: s.rackId } : {}),
      ...(s.runId !== undefined ? { runId: s.runId } : {}),
      ...(s.assignor !== undefined ? { assignor: s.assignor } : {}),
    };
  }

  /**
   * Adopts a successful response: the epoch always, the assignment when present. Returns the new
   * assignment when it changed, else `null`.
   */
  onResponse(response: HeartbeatResponse): ReadonlyMap<string, GrantedShard> | null {
    this.epoch = response.memberEpoch;
    this.full = false;
    this.interval = response.heartbeatIntervalMs;
    this.session = response.sessionTimeoutMs;
    if (!response.assignment) return null;
    const next = new Map<string, GrantedShard>();
    for (const entry of response.assignment.shards) addEntry(next, entry);
    const changed =
      next.size !== this.granted.size || [...next.keys()].some((k) => !this.granted.has(k));
    this.granted = next;
    return changed ? next : null;
  }

  /** After a failed or timed-out request: the next one is full. */
  onTransientFailure(): void {
    this.full = true;
  }

  /**
   * Forgets the assignment and the epoch (fenced, unknown member, local self-fence): the next
   * request is a join with epoch 0 and the same member id.
   */
  reset(): void {
    this.epoch = 0;
    this.full = true;
    this.granted = new Map();
  }
}

function addEntry(into: Map<string, GrantedShard>, entry: AssignedStreamShards): void {
  entry.shards.forEach((shard, i) => {
    const key = entry.keys[i];
    if (key !== undefined)
      into.set(shardId(entry.stream, shard), { stream: entry.stream, shard, key });
  });
}

/** `[{stream, shards}]`, streams by name, shards ascending. */
export function groupByStream(shards: Iterable<{ stream: string; shard: number }>): StreamShards[] {
  const byStream = new Map<string, number[]>();
  for (const { stream, shard } of shards) {
    const list = byStream.get(stream);
    if (list) list.push(shard);
    else byStream.set(stream, [shard]);
  }
  return [...byStream]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([stream, list]) => ({ stream, shards: [...new Set(list)].sort((x, y) => x - y) }));
}
