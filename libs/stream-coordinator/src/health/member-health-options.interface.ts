/**
 * Thresholds of the member health checks. Every field is optional; defaults derive from what
 * the coordinator announced (heartbeat interval, session timeout) and the module options.
 *
 * @publicApi
 */
export interface MemberHealthOptions {
  /**
   * `coordinator` is down when the last answered heartbeat is older than this. Default:
   * 2 × heartbeat interval + request timeout, at most ¾ of the session timeout (where the member
   * fences itself).
   */
  maxHeartbeatAgeMs?: number;
  /**
   * `assignment` is `degraded` while the held shards differ from the assigned ones (a revoked
   * shard's handler is still settling) and `down` once that lasted longer than this. Default:
   * the smaller of the rebalance timeout and 15 s.
   */
  convergenceGraceMs?: number;
  /**
   * `fencing` is down for this long after the coordinator fenced the member or a shard was lost
   * to the data-plane fence. Default: 2 × heartbeat interval, at least 5 s.
   */
  fencedHoldMs?: number;
  /** `fencing` is down when a new shard's reader waits longer than this for its fence. Default 5 s. */
  fenceWaitMs?: number;
  /** Bound of the Redis `PING` of the `redis` check. Default 1000 ms. */
  pingTimeoutMs?: number;
}

/** Injection token of module-wide {@link MemberHealthOptions}. @publicApi */
export const STREAM_COORDINATOR_HEALTH_OPTIONS = 'STREAM_COORDINATOR:HEALTH_OPTIONS';
