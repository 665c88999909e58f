/** Corrections larger than this are taken at once; smaller ones are smoothed. */
const JUMP_MS = 1000;

/**
 * The coordinator's notion of "now": Redis server time, estimated locally. Every Lua call returns
 * Redis's clock; the offset to the local clock is tracked so all replicas time sessions and
 * rebalances against one clock (Redis's), whatever their own clocks say.
 *
 * On Redis Cluster each group lives on one master, and masters' clocks may disagree
 * (docs/protocol.md §4.6). So an observation made for a group also updates an estimate kept for
 * that group alone, and the times stamped into a group (a revocation's start) come from it: they
 * are compared later with that group's own Redis time. A group is observed when it is loaded, so
 * before anything is stamped into it, and at each commit, touch and session scan. The shared
 * estimate, moved by every observation, serves everything not kept in a group. The session timers
 * drop the estimates of groups that no longer exist ({@link retainGroups}).
 */
export class RedisClock {
  private shared: number | undefined;
  private readonly groups = new Map<string, number>();

  /**
   * Records a Redis timestamp observed around local time `localAt` (default: now), read from the
   * Redis server that holds `group` when one is given.
   */
  observe(redisNowMs: number, group?: string, localAt: number = Date.now()): void {
    const offset = redisNowMs - localAt;
    this.shared = smooth(this.shared, offset);
    if (group === undefined) return;
    this.groups.set(group, smooth(this.groups.get(group), offset));
  }

  /** Forgets the estimates of groups not in `existing` (deleted since they were observed). */
  retainGroups(existing: ReadonlySet<string>): void {
    for (const group of this.groups.keys()) {
      if (!existing.has(group)) this.groups.delete(group);
    }
  }

  /** Estimated Redis time, ms: that of the server holding `group` when one is given. */
  now(group?: string): number {
    const offset = (group === undefined ? undefined : this.groups.get(group)) ?? this.shared ?? 0;
    return Math.round(Date.now() + offset);
  }
}

/** Smooths small jitter, jumps on large corrections (e.g. a Redis failover to another host). */
function smooth(current: number | undefined, offset: number): number {
  return current === undefined || Math.abs(offset - current) > JUMP_MS
    ? offset
    : current * 0.8 + offset * 0.2;
}
