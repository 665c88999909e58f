import type { GroupScan, GroupStore } from '../store/group-store.js';
import type { GroupIndexRepair } from './group-index-repair.js';
import type { GroupCoordinator } from './group-coordinator.js';

/** Groups scanned per round trip. */
const SCAN_BATCH = 32;

/**
 * How far the Redis clock may run ahead of this replica's monotonic clock between two scans
 * before it counts as a jump: a tenth of the session timeout, at most 1 s (well inside the
 * members' 25 % self-fence margin), plus 1 ms per second between the scans for the clocks' rates
 * (NTP slews a clock by at most 0.5 ms per second).
 */
const JUMP_TOLERANCE_SHARE = 0.1;
const JUMP_TOLERANCE_MAX_MS = 1000;
const JUMP_TOLERANCE_RATE = 0.001;

/** When a group's previous scan read the Redis clock, by the local monotonic clock. */
interface ScanTiming {
  readonly redisNow: number;
  /** Before the scan was sent. */
  readonly sentAt: number;
  /** When its answer came. */
  readonly receivedAt: number;
}

/** The clock steps one tick saw over its groups: the largest each way, and in how many groups. */
class ClockSteps {
  aheadMs = 0;
  aheadGroups = 0;
  backMs = 0;
  backGroups = 0;

  ahead(ms: number): void {
    this.aheadMs = Math.max(this.aheadMs, ms);
    this.aheadGroups++;
  }

  back(ms: number): void {
    this.backMs = Math.max(this.backMs, ms);
    this.backGroups++;
  }
}

/** Minimal logger (Nest's `Logger` fits). */
interface TimerLogger {
  warn(message: string): void;
}

/** The slow index repair the timers run ({@link GroupIndexRepair}) and how often. */
export interface IndexRepairSchedule {
  readonly repair: GroupIndexRepair;
  /** A pass runs every `intervalMs` to `2 × intervalMs` (jittered so replicas spread out). */
  readonly intervalMs: number;
}

/**
 * Session and rebalance timeouts (docs/protocol.md §4.6), run by every replica: each tick reads
 * every group's heartbeat times with the Redis clock, and removes members whose session ran out
 * (the removal re-checks atomically that no heartbeat arrived meanwhile) or who stayed in
 * UNREVOKED_SHARDS past their rebalance timeout. Timers are "fresh" after a start or a Redis
 * reconnect: nobody expires before a full session timeout has passed since then (Kafka re-arms
 * every timer when a coordinator loads). They also repair the index of groups: an existing group
 * this replica has cached but the index lacks is indexed again, and an indexed group that no longer
 * exists leaves it (the index is written next to a group's commits, not in them: a crash in between
 * would otherwise leave a group that no timer expires, no reshard tracks and no list shows). A
 * group no replica has cached is found by the slower {@link GroupIndexRepair} pass, which SCANs
 * the group meta hashes themselves.
 *
 * Timers are fresh again after the Redis clock jumped ahead (an NTP step, a VM resumed): sessions
 * are measured on Redis' wall clock, members time their lease on a monotonic one, so a jump larger
 * than their self-fence margin would expire members whose lease has not run out by their own
 * clock, and give their shards away while they still handle them. Between two scans of a group,
 * its Redis time cannot advance more than this replica's monotonic time from sending the first to
 * the answer of the second; more than that (plus a tolerance) is a jump. Each group is compared
 * with its own previous scan (on Redis Cluster, masters' clocks may disagree), and a jump in any
 * restarts every timer. The coordinator's other readings of a group's clock (loads, commits,
 * heartbeats) are compared with each other by the `RedisClock`, and a jump they show
 * restarts every timer too, before the tick judges anyone: a heartbeat may be the first to read
 * the clock of a master a group moved to. The fresh period itself is timed on the monotonic clock.
 *
 * A step back is the mirror case: Redis time advanced less than the monotonic time from the first
 * scan's answer to sending the second. Heartbeats timed before it lie in Redis's future, so a
 * member that stopped just before the step would keep its shards for the length of the step;
 * the scan sets such times to now (the member gets a whole session from the first scan after the
 * step); the fresh period, on the monotonic clock, is not lengthened by it. A step back and forward
 * again between two scans of a group shows neither way (docs/protocol.md §4.6, not covered).
 */
export class SessionTimers {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  /** Start of the fresh period, on this replica's monotonic clock (`null`: from the first scan). */
  private freshSince: number | null = null;
  private groupIds: string[] = [];
  private ticks = 0;
  private nextRepairAt: number;
  /**
   * Per group, the Redis clock at its previous scan, and the local monotonic times before that
   * scan was sent and when its answer came. Per group, not per replica: on Redis Cluster each
   * group's clock is its master's, and masters' clocks may disagree.
   */
  private readonly previousScans = new Map<string, ScanTiming>();

  constructor(
    private readonly store: GroupStore,
    private readonly coordinator: GroupCoordinator,
    private readonly intervalMs: number,
    private readonly logger: TimerLogger,
    private readonly indexRepair: IndexRepairSchedule | null = null,
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    this.nextRepairAt = indexRepair ? Date.now() + Math.random() * indexRepair.intervalMs : 0;
  }

  /** Starts ticking; timers count from now. */
  start(): void {
    this.restartClock();
    this.timer ??= setInterval(() => {
      if (!this.running) {
        this.running = this.tick()
          .catch((error: unknown) => this.logger.warn(`session timers: ${String(error)}`))
          .finally(() => {
            this.running = null;
          });
      }
    }, this.intervalMs);
    this.timer.unref();
  }

  /**
   * Every member's timer starts over (after a reconnect to Redis), from now: a scan sent before
   * and answered after it (ioredis resends it on the new connection) does not move the start
   * back.
   */
  restartClock(): void {
    this.freshSince = this.monotonic();
    this.previousScans.clear();
  }

  /** Stops ticking and waits for a tick in progress. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One pass over every group. Public for tests. */
  async tick(): Promise<void> {
    if (this.ticks++ % 8 === 0 || this.groupIds.length === 0) {
      this.groupIds = await this.store.listGroupIds();
      const listed = new Set(this.groupIds);
      for (const groupId of this.previousScans.keys()) {
        if (!listed.has(groupId)) this.previousScans.delete(groupId);
      }
      // Cached groups too: one created since the list was read is indexed after its commit.
      this.coordinator.clock.retainGroups(
        new Set([...listed, ...this.coordinator.cachedGroups().keys()]),
      );
      await this.reindexCachedGroups();
    }
    await this.repairIndex();
    const sessionTimeoutMs = this.coordinator.rules.sessionTimeoutMs;
    // Every group is scanned, and compared with its previous scan, before any is handled: a group
    // scanned for the first time has nothing to compare with, and a jump the others show must
    // restart the timers before its members are judged.
    // A group whose scan fails is skipped this tick (logged once); the others are still judged.
    const steps = new ClockSteps();
    const scanned: Array<{ groupId: string; scan: GroupScan; sentAt: number }> = [];
    const failed: Array<{ groupId: string; reason: unknown }> = [];
    for (let i = 0; i < this.groupIds.length; i += SCAN_BATCH) {
      // One round trip for a whole batch of groups (commands sent together are pipelined).
      const batch = this.groupIds.slice(i, i + SCAN_BATCH);
      const sentAt = this.monotonic();
      const readingSentAt = this.coordinator.clock.mark();
      const scans = await Promise.allSettled(
        batch.map((groupId) =>
          this.store.scan(groupId, sessionTimeoutMs).then((scan) => ({ scan, wallAt: Date.now() })),
        ),
      );
      const timing = { sentAt, receivedAt: this.monotonic() };
      for (const [k, groupId] of batch.entries()) {
        const result = scans[k] as PromiseSettledResult<{ scan: GroupScan; wallAt: number }>;
        if (result.status === 'rejected') {
          failed.push({ groupId, reason: result.reason });
          continue;
        }
        const { scan, wallAt } = result.value;
        this.noticeClockJump(groupId, scan.now, timing, sessionTimeoutMs, steps);
        // The estimate takes the wall time of this scan's own answer, the jump check the batch's
        // send time; after this scan's own check, which may compare with the previous reading.
        this.coordinator.clock.observeGroup(groupId, scan.now, {
          sentAt: readingSentAt,
          localAt: wallAt,
          watch: false,
        });
        scanned.push({ groupId, scan, sentAt });
      }
    }
    // Jumps a heartbeat, a commit or a load saw first (a group moved to a master whose clock is
    // ahead, and heartbeated there before this replica scanned it there).
    for (const advance of this.coordinator.clock.takeAdvances().values()) {
      if (advance.aheadMs > this.jumpTolerance(advance.elapsedMs, sessionTimeoutMs)) {
        this.freshSince = Math.max(this.freshSince ?? -Infinity, advance.at);
        steps.ahead(advance.aheadMs);
      }
    }
    this.reportClockSteps(steps, sessionTimeoutMs);
    const [first] = failed;
    if (first) {
      this.logger.warn(
        `session timers: could not scan ${failed.length} of ${this.groupIds.length} groups (${first.groupId}: ${String(first.reason)}); the others are checked`,
      );
    }
    for (const { groupId, scan, sentAt } of scanned) {
      await this.handleScan(groupId, scan, sentAt, sessionTimeoutMs);
    }
  }

  /**
   * Restarts every timer when the Redis clock of a group advanced more since that group's
   * previous scan than this replica's monotonic clock allows, and notes a step back when it
   * advanced less (see the class comment); `steps` collects both for one log line per tick.
   */
  private noticeClockJump(
    groupId: string,
    redisNow: number,
    timing: Omit<ScanTiming, 'redisNow'>,
    sessionTimeoutMs: number,
    steps: ClockSteps,
  ): void {
    const previous = this.previousScans.get(groupId) ?? this.observedBefore(groupId);
    this.previousScans.set(groupId, { redisNow, ...timing });
    if (previous === undefined) return;
    const advanced = redisNow - previous.redisNow;
    const tolerance = (elapsed: number): number => this.jumpTolerance(elapsed, sessionTimeoutMs);
    // At most the time from sending the previous scan to this one's answer...
    const longest = timing.receivedAt - previous.sentAt;
    const ahead = advanced - longest;
    if (ahead > tolerance(longest)) {
      this.freshSince = Math.max(this.freshSince ?? -Infinity, timing.receivedAt);
      steps.ahead(ahead);
      return;
    }
    // ...and at least the time from the previous answer to sending this one. The fresh period is
    // timed on the monotonic clock, so a step back does not lengthen it; the scan sets a last
    // heartbeat timed before the step to now.
    const shortest = timing.sentAt - previous.receivedAt;
    const behind = shortest - advanced;
    if (behind > tolerance(shortest)) steps.back(behind);
  }

  /** How far a group's Redis clock may run ahead of the monotonic clock over `elapsed` ms. */
  private jumpTolerance(elapsed: number, sessionTimeoutMs: number): number {
    return (
      Math.min(JUMP_TOLERANCE_MAX_MS, sessionTimeoutMs * JUMP_TOLERANCE_SHARE) +
      elapsed * JUMP_TOLERANCE_RATE
    );
  }

  /**
   * For a group this replica has not scanned yet (created, or last restarted, since): the last
   * time it read the group's Redis clock otherwise (loading it, a commit, a heartbeat). So a group
   * whose slot moved to a master with another clock before its first scan is compared too: its
   * heartbeat times were taken on the clock it left. (Also when that reading was recorded after
   * this scan was sent: its send time bounds a jump ahead either way; a step back is only logged.)
   */
  private observedBefore(groupId: string): ScanTiming | undefined {
    const seen = this.coordinator.clock.lastObserved(groupId);
    if (seen === undefined) return undefined;
    return { redisNow: seen.redisNow, sentAt: seen.sentAt, receivedAt: seen.at };
  }

  /** Logs the clock steps one tick saw, once. */
  private reportClockSteps(steps: ClockSteps, sessionTimeoutMs: number): void {
    const groups = (n: number): string => (n === 1 ? '' : ` (${n} groups)`);
    if (steps.aheadGroups > 0) {
      this.logger.warn(
        `the Redis clock jumped ahead by about ${Math.round(steps.aheadMs)} ms${groups(steps.aheadGroups)} (an NTP step, a resumed VM, a group moved to a master whose clock is ahead?): every session timer starts over, so no member expires before ${sessionTimeoutMs} ms from now`,
      );
    }
    if (steps.backGroups > 0) {
      this.logger.warn(
        `the Redis clock stepped back by about ${Math.round(steps.backMs)} ms${groups(steps.backGroups)} (an NTP step?): heartbeats timed before it count as made now`,
      );
    }
  }

  /** Runs a pass of the slow index repair when it is due; its finds are scanned at once. */
  private async repairIndex(): Promise<void> {
    if (!this.indexRepair || Date.now() < this.nextRepairAt) return;
    const { repair, intervalMs } = this.indexRepair;
    this.nextRepairAt = Date.now() + intervalMs * (1 + Math.random());
    for (const groupId of await repair.pass()) {
      if (!this.groupIds.includes(groupId)) this.groupIds.push(groupId);
    }
  }

  /** Indexes every existing group this replica has cached that the index lacks. */
  private async reindexCachedGroups(): Promise<void> {
    const indexed = new Set(this.groupIds);
    for (const [groupId, cached] of this.coordinator.cachedGroups()) {
      if (!cached.exists || indexed.has(groupId)) continue;
      this.groupIds.push(groupId);
      // (indexed meanwhile when it was created after the list was read)
      if (await this.store.index(groupId)) {
        this.logger.warn(
          `group ${groupId} exists but was not in the index of groups; indexed again`,
        );
      }
    }
  }

  /**
   * Expires the stale members of one scanned group, then checks its rebalance timeouts; `sentAt`
   * is when its scan was sent, on the monotonic clock.
   */
  private async handleScan(
    groupId: string,
    scan: GroupScan,
    sentAt: number,
    sessionTimeoutMs: number,
  ): Promise<void> {
    if (scan.version === 0) {
      // Deleted, its removal from the index lost (re-indexed if it was created again meanwhile).
      await this.store.unindex(groupId);
      return;
    }
    this.freshSince ??= sentAt;
    // The fresh period's start on this group's Redis clock (the scan read it after `sentAt`, so
    // this errs late, on the side of sparing members).
    const freshAt = scan.now - (sentAt - this.freshSince);
    if (scan.now - freshAt >= sessionTimeoutMs) {
      for (const { memberId, seenAt } of scan.stale) {
        await this.coordinator.expire(groupId, memberId, {
          reason: 'expiry',
          seenBefore: scan.now - sessionTimeoutMs,
          seenAt,
        });
      }
    }
    // Only groups where a rebalance timeout can have run out need their members read.
    const deadline = scan.revokeDeadline;
    if (deadline === null || (deadline !== undefined && scan.now <= deadline)) return;
    await this.checkRebalanceTimeouts(groupId, scan.version, scan.now, freshAt);
  }

  private async checkRebalanceTimeouts(
    groupId: string,
    version: number,
    now: number,
    fresh: number,
  ): Promise<void> {
    let cached = this.coordinator.cachedGroups().get(groupId);
    if (!cached || cached.state.meta.version !== version) {
      if (version === 0) return;
      cached = await this.coordinator.read(groupId);
    }
    const overdue: Array<[string, number]> = [];
    for (const m of cached.state.members.values()) {
      if (m.state !== 'UNREVOKED_SHARDS' || m.revokeStartedAt === null) continue;
      if (now > Math.max(m.revokeStartedAt, fresh) + m.rebalanceTimeoutMs)
        overdue.push([m.memberId, m.revokeStartedAt]);
    }
    // Each removal re-checks that the member is still in that same revocation: it may have
    // acknowledged (and even entered a new one) since the state above was read.
    for (const [memberId, revokeStartedAt] of overdue) {
      await this.coordinator.expire(groupId, memberId, {
        reason: 'rebalance-timeout',
        revokeStartedAt,
      });
    }
  }
}
