/** Corrections larger than this are taken at once; smaller ones are smoothed. */
const JUMP_MS = 1000;

/** A reading of a group's Redis clock. */
export interface GroupReading {
  /**
   * When the command that read it was sent, from {@link RedisClock.mark}: the jump check counts
   * from the previous reading's, so a reading recorded late (a busy event loop, a slow scan batch)
   * can only hide a jump, never make one.
   */
  readonly sentAt: number;
  /** Local wall time when Redis answered (default: now). */
  readonly localAt?: number;
  /**
   * Whether to compare it with the group's previous reading for a jump ahead (default true). The
   * session timers compare their own scans, with finer timing, and pass false.
   */
  readonly watch?: boolean;
}

/** How far a group's Redis clock advanced beyond this replica's monotonic clock between readings. */
export interface ClockAdvance {
  /** The most it ran ahead, ms (advance of the Redis clock minus the local time in between). */
  readonly aheadMs: number;
  /** The local (monotonic) time between the two readings that showed it. */
  readonly elapsedMs: number;
  /** When the later one was made, on the monotonic clock. */
  readonly at: number;
}

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
 *
 * Each reading of a group is also compared with its previous one: a group whose clock ran ahead of
 * the local monotonic clock between them (its slot moved to a master whose clock is ahead, an NTP
 * step) is kept for the session timers ({@link takeAdvances}), which then restart every timer
 * before they judge anyone — also when a heartbeat, not a scan, was the first to read the new clock.
 */
export class RedisClock {
  private shared: number | undefined;
  private readonly groups = new Map<string, GroupClock>();
  private readonly advances = new Map<string, ClockAdvance>();

  /** `monotonic`: the local monotonic clock readings are timed on. */
  constructor(private readonly monotonic: () => number = () => performance.now()) {}

  /** Now on the monotonic clock readings are timed on: pass it as `sentAt` to {@link observeGroup}. */
  mark(): number {
    return this.monotonic();
  }

  /** Records a Redis timestamp read at local wall time `localAt` (default: now). */
  observe(redisNowMs: number, localAt: number = Date.now()): void {
    this.shared = smooth(this.shared, redisNowMs - localAt);
  }

  /** Records a Redis timestamp read from the Redis server that holds `group`. */
  observeGroup(group: string, redisNowMs: number, reading: GroupReading): void {
    const offset = redisNowMs - (reading.localAt ?? Date.now());
    this.shared = smooth(this.shared, offset);
    const at = this.monotonic();
    const previous = this.groups.get(group);
    if (previous !== undefined && reading.watch !== false) {
      // At most the time from sending the previous reading's command to this one's answer.
      const elapsedMs = at - previous.sentAt;
      const aheadMs = redisNowMs - previous.redisNow - elapsedMs;
      if (aheadMs > 0 && aheadMs > (this.advances.get(group)?.aheadMs ?? 0)) {
        this.advances.set(group, { aheadMs, elapsedMs, at });
      }
    }
    this.groups.set(group, {
      offset: smooth(previous?.offset, offset),
      redisNow: redisNowMs,
      at,
      sentAt: Math.min(reading.sentAt, at),
    });
  }

  /**
   * The last Redis time observed for `group`, and when (on the monotonic clock): what the session
   * timers compare a group's first scan with.
   */
  lastObserved(
    group: string,
  ): { readonly redisNow: number; readonly at: number; readonly sentAt: number } | undefined {
    return this.groups.get(group);
  }

  /** The groups whose clock ran ahead between two readings since the last call, and by how much. */
  takeAdvances(): Map<string, ClockAdvance> {
    const taken = new Map(this.advances);
    this.advances.clear();
    return taken;
  }

  /** Forgets the estimates of groups not in `existing` (deleted since they were observed). */
  retainGroups(existing: ReadonlySet<string>): void {
    for (const group of this.groups.keys()) {
      if (!existing.has(group)) this.groups.delete(group);
    }
  }

  /** Estimated Redis time, ms: that of the server holding `group` when one is given. */
  now(group?: string): number {
    const offset =
      (group === undefined ? undefined : this.groups.get(group)?.offset) ?? this.shared ?? 0;
    return Math.round(Date.now() + offset);
  }
}

/** A group's estimate (offset to the local wall clock) and its last reading. */
interface GroupClock {
  readonly offset: number;
  readonly redisNow: number;
  /** When it was recorded, on the monotonic clock. */
  readonly at: number;
  /** When the command that read it was sent (at most {@link at}). */
  readonly sentAt: number;
}

/** Smooths small jitter, jumps on large corrections (e.g. a Redis failover to another host). */
function smooth(current: number | undefined, offset: number): number {
  return current === undefined || Math.abs(offset - current) > JUMP_MS
    ? offset
    : current * 0.8 + offset * 0.2;
}
