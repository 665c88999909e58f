/**
 * JSON shapes of the coordinator's HTTP API (docs/protocol.md §3, §6, §8, §9). Both the coordinator
 * and the member runtime compile against these, so a change here is a change of the wire protocol.
 */

/**
 * Shards of one stream: `{"stream", "shards"}`. Shard ids ascending.
 *
 * @publicApi
 */
export interface StreamShards {
  stream: string;
  shards: number[];
}

/**
 * An assignment entry in a heartbeat response: the shards plus the Redis key of each, in order.
 *
 * @publicApi
 */
export interface AssignedStreamShards extends StreamShards {
  keys: string[];
}

/**
 * Body of `POST /v1/groups/{groupId}/heartbeat`. An absent field means "unchanged since my last
 * heartbeat"; a full request carries `rebalanceTimeoutMs`, `subscribedStreams` and `ownedShards`.
 *
 * @publicApi
 */
export interface HeartbeatRequest {
  memberId: string;
  memberEpoch: number;
  instanceId?: string;
  rackId?: string;
  /**
   * A random id of the running member process (new on every start), sent on joins and full
   * requests: a join under a member id a live member of another run holds is refused with
   * `MEMBER_ID_IN_USE` (two processes given the same fixed member id).
   */
  runId?: string;
  rebalanceTimeoutMs?: number;
  subscribedStreams?: string[];
  assignor?: string;
  ownedShards?: StreamShards[];
}

/**
 * What changed in a heartbeat and why (beyond Kafka): shards newly added, shards this member must
 * revoke, and shards of its target that wait for another member's release.
 *
 * @publicApi
 */
export interface AssignmentDiff {
  added: StreamShards[];
  revoking: StreamShards[];
  awaitingRelease: StreamShards[];
}

/**
 * `200` response of a (non-leave) heartbeat.
 *
 * @publicApi
 */
export interface HeartbeatResponse {
  memberId: string;
  memberEpoch: number;
  heartbeatIntervalMs: number;
  sessionTimeoutMs: number;
  /** The full set the member may process now; absent when unchanged. */
  assignment?: { shards: AssignedStreamShards[] };
  diff: AssignmentDiff;
}

/**
 * Response of a leave (`-1` or `-2` heartbeat, or the leave route).
 *
 * @publicApi
 */
export interface LeaveResponse {
  memberId: string;
  memberEpoch: number;
}

/**
 * Body of `POST /v1/groups/{groupId}/leave`.
 *
 * @publicApi
 */
export interface LeaveRequest {
  memberId: string;
  instanceId?: string;
  temporary?: boolean;
  memberEpoch?: number;
}

/** Group state as described (docs/protocol.md §6.4). @publicApi */
export type GroupStateName = 'EMPTY' | 'ASSIGNING' | 'RECONCILING' | 'STABLE';

/** Member reconciliation state (docs/protocol.md §4.2). @publicApi */
export type MemberStateName = 'STABLE' | 'UNREVOKED_SHARDS' | 'UNRELEASED_SHARDS';

/**
 * A member in `GET /v1/groups/{groupId}`.
 *
 * @publicApi
 */
export interface DescribedMember {
  memberId: string;
  instanceId: string | null;
  rackId: string | null;
  memberEpoch: number;
  state: MemberStateName;
  subscribedStreams: string[];
  assignment: StreamShards[];
  pendingRevocation: StreamShards[];
  target: StreamShards[];
  lastHeartbeatAt: string;
  clientHost: string | null;
}

/**
 * Body of `GET /v1/groups/{groupId}`.
 *
 * @publicApi
 */
export interface DescribedGroup {
  groupId: string;
  state: GroupStateName;
  groupEpoch: number;
  assignmentEpoch: number;
  assignor: string;
  members: DescribedMember[];
}

/**
 * An entry of `GET /v1/groups`.
 *
 * @publicApi
 */
export interface GroupListing {
  groupId: string;
  state: GroupStateName;
  groupEpoch: number;
  members: number;
}

/**
 * An entry of the group event log (`GET /v1/groups/{groupId}/events`).
 *
 * @publicApi
 */
export interface GroupEventEntry {
  id: string;
  type: string;
  at: string;
  groupEpoch: number;
  data: Record<string, unknown>;
}

/**
 * Routing function description carried in the routing body, precise enough for a producer in any
 * language: `slot = murmur3_x86_32(utf8(key), seed) mod slots`, then the range holding `slot`
 * names the shard.
 *
 * @publicApi
 */
export interface RoutingFunction {
  /** Always `murmur3-slots`. */
  function: 'murmur3-slots';
  /** Always `murmur3_x86_32`. */
  hash: 'murmur3_x86_32';
  seed: number;
  /** Size of the fixed slot space. */
  slots: number;
  /** Contiguous, ascending, non-overlapping `[from, to)` slot ranges covering `0…slots-1`. */
  ranges: Array<{ from: number; to: number; shard: number }>;
}

/**
 * A shard as listed in the routing body.
 *
 * @publicApi
 */
export interface RoutedShard {
  id: number;
  key: string;
}

/**
 * Body of `GET /v1/streams/{stream}` (docs/protocol.md §8.3).
 *
 * @publicApi
 */
export interface StreamRouting {
  stream: string;
  routingEpoch: number;
  shards: RoutedShard[];
  deadLetterKey: string;
  routing: RoutingFunction;
  resharding: ReshardingStatus | null;
}

/**
 * Progress of a running shard-count change.
 *
 * @publicApi
 */
export interface ReshardingStatus {
  /** `preparing` → `closing` → `draining` → `completing` (then the field is `null`). */
  state: string;
  mode: 'strict' | 'relaxed';
  /**
   * `kept`: a new shard's messages of a key are handled only after every earlier message of that
   * key in the old shards was handled and acked (strict mode). `not-guaranteed`: relaxed mode
   * starts the new shards at once, so a key's old and new messages may be handled concurrently.
   */
  keyOrder: 'kept' | 'not-guaranteed';
  fromShards: number[];
  toShards: number[];
  startedAt: string;
  /** Groups the change waits for (tracked when the new layout was published). */
  groups: string[];
  /**
   * Tracked groups the change stopped waiting for: deleted, or abandoned by an admin
   * (`POST /v1/streams/{stream}/groups/{group}/abandon`); `idle` only from coordinators that gave
   * idle groups up after a grace period.
   */
  abandonedGroups: Array<{ group: string; reason: 'deleted' | 'admin' | 'idle'; at: string }>;
  /**
   * Groups the change still waits for that have no member subscribed to the stream, and since
   * when: their old shards are kept until they come back and drain them, or an admin abandons them.
   */
  idleGroups: Array<{ group: string; since: string }>;
  /** Per old shard: which groups have drained it, which still have work left. */
  drain: Array<{
    shard: number;
    key: string;
    closed: boolean;
    drainedGroups: string[];
    /** Groups whose members no longer hold it (after the drain). */
    releasedGroups: string[];
    pendingGroups: string[];
    removed: boolean;
  }>;
}
