import { KeySpace, type ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import type { MemberCrash, RedisClockStep, RedisRollback } from '../../support/invariants/index.js';
import { CHAOS_GROUP, CHAOS_IDLE_GROUP, CHAOS_STREAM, type ChaosCluster } from './chaos-cluster.js';
import { startIdleGroup, stopIdleGroup } from './idle-group.js';
import type { ChaosAction, FaultSchedule, ScheduledAction } from './fault-schedule.js';
import { recreateGroupAcrossReplicas } from './group-recreate-probe.js';
import { connectRedis } from '../../support/redis-client.js';

/** A Redis rollback the harness caused, with each stream's last entry id that survived it. */
export interface RecordedRollback extends RedisRollback {
  /** Shard key → last entry id that survived. */
  readonly tails: ReadonlyMap<string, string>;
  /**
   * `deliveredKey(group, shard key)` → that group's last-delivered-id that survived (absent: no
   * such consumer group there).
   */
  readonly delivered: ReadonlyMap<string, string>;
}

/** What happened to one action. */
export interface ActionOutcome {
  readonly planned: ScheduledAction;
  /** ms after the fault phase began, when it started and ended. */
  readonly startedAt: number;
  readonly endedAt: number;
  readonly ok: boolean;
  readonly note: string;
}

/**
 * Runs a {@link FaultSchedule} against a {@link ChaosCluster}: each action starts at its planned
 * time, or later when the previous action on the same target has not finished yet (a member
 * that takes long to start is frozen only once it runs). Records when each action really ran and
 * how it ended.
 */
export class FaultInjector {
  readonly outcomes: ActionOutcome[] = [];
  /** Member processes killed with SIGKILL, and when they were known dead (wall clock). */
  readonly crashes: MemberCrash[] = [];
  /** Redis restarts that lost writes: when, and each stream's last entry id that survived. */
  readonly rollbacks: RecordedRollback[] = [];
  /** Steps of Redis's wall clock, to map the event logs' times back onto the machine's. */
  readonly clockSteps: RedisClockStep[] = [];
  private readonly chains = new Map<string, Promise<void>>();
  private origin = 0;

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly log: (line: string) => void,
  ) {}

  /** Runs every action; resolves when the last one finished. */
  async run(schedule: FaultSchedule): Promise<void> {
    this.origin = performance.now();
    for (const planned of schedule.actions) {
      const wait = planned.at - this.elapsed();
      if (wait > 0) await sleep(wait);
      const previous = this.chains.get(planned.target) ?? Promise.resolve();
      this.chains.set(
        planned.target,
        previous.then(() => this.perform(planned)),
      );
    }
    await Promise.all(this.chains.values());
  }

  /** Actions that failed. */
  failures(): ActionOutcome[] {
    return this.outcomes.filter((o) => !o.ok);
  }

  /** One line per action: planned and real time, what, how it ended. */
  timeline(): string[] {
    return [...this.outcomes]
      .sort((a, b) => a.startedAt - b.startedAt)
      .map(
        (o) =>
          `  +${(o.startedAt / 1000).toFixed(2).padStart(7)} s ${this.wallClock(o.startedAt)} (planned +${(o.planned.at / 1000).toFixed(2)}, took ${Math.round(o.endedAt - o.startedAt)} ms) ` +
          `#${o.planned.fault + 1} ${describe(o.planned.action)}${o.ok ? '' : ' FAILED'}${o.note ? `: ${o.note}` : ''}`,
      );
  }

  /** The wall-clock time (UTC, to the ms) of a point on the run's clock: what the checkers print. */
  private wallClock(elapsed: number): string {
    return new Date(performance.timeOrigin + this.origin + elapsed).toISOString().slice(11, 23);
  }

  private elapsed(): number {
    return performance.now() - this.origin;
  }

  private async perform(planned: ScheduledAction): Promise<void> {
    const startedAt = this.elapsed();
    let ok = true;
    let note = '';
    try {
      note = await this.apply(planned.action);
    } catch (error) {
      ok = false;
      note =
        error instanceof Error ? error.message.split('\n').slice(0, 3).join(' | ') : String(error);
    }
    const outcome = { planned, startedAt, endedAt: this.elapsed(), ok, note };
    this.outcomes.push(outcome);
    this.log(
      `chaos +${(startedAt / 1000).toFixed(1)} s: ${describe(planned.action)}${ok ? '' : ' FAILED'}${note ? ` (${note})` : ''}`,
    );
  }

  private async apply(action: ChaosAction): Promise<string> {
    const c = this.cluster;
    switch (action.type) {
      case 'start-member': {
        const member = await c.startMember(action.member);
        return `incarnation ${member.incarnations}`;
      }
      case 'signal-member': {
        const process = c.members.get(action.member)?.process;
        if (!process?.running) return 'not running';
        const code = await process.stop(action.signal);
        if (action.signal === 'SIGKILL')
          this.crashes.push({ memberId: action.member, at: Date.now() });
        return `exited (${String(code)})`;
      }
      case 'freeze':
      case 'thaw': {
        const member = c.members.get(action.member);
        if (!member?.process?.running) return 'not running';
        member.process.signal(action.type === 'freeze' ? 'SIGSTOP' : 'SIGCONT');
        member.frozen = action.type === 'freeze';
        return '';
      }
      case 'black-hole':
        c.members.get(action.member)?.front.blackHole();
        return '';
      case 'heal':
        c.members.get(action.member)?.front.heal({ cut: action.cut });
        return '';
      case 'delay-responses': {
        const front = c.members.get(action.member)?.front;
        if (front) front.responseDelayMs = action.ms;
        return '';
      }
      case 'drop-responses':
        c.members.get(action.member)?.front.dropResponses();
        return '';
      case 'stop-coordinator':
        await c.stopReplica(action.replica, action.signal);
        return '';
      case 'start-coordinator':
        await c.startReplica(action.replica);
        return '';
      case 'restart-redis':
        if (action.crash) await c.redis.kill();
        await c.redis.restart();
        return '';
      case 'rollback-redis':
        return this.rollbackRedis(action.lostMs);
      case 'set-redis-clock':
        return this.setRedisClock(action.offsetMs);
      case 'reshard':
        return this.reshard(action.shards);
      case 'recreate-group':
        return recreateGroupAcrossReplicas(c, action.group);
      case 'stop-idle-group':
        return stopIdleGroup(c);
      case 'start-idle-group':
        return startIdleGroup(c);
    }
  }

  /**
   * Sets Redis's wall clock `offsetMs` from the machine's, between two reads of each checked
   * group's last event id (which tell the checker which events came after the step).
   */
  private async setRedisClock(offsetMs: number): Promise<string> {
    const c = this.cluster;
    const keys = new KeySpace(c.prefix);
    const groups = [CHAOS_GROUP, CHAOS_IDLE_GROUP];
    const lastIds = (): Promise<Array<string | null>> =>
      Promise.all(
        groups.map(async (group) => {
          const last = await c
            .redisClient()
            .xrevrange(keys.groupEventsKey(group), '+', '-', 'COUNT', 1);
          return last[0]?.[0] ?? null;
        }),
      );
    const before = await lastIds();
    const at = Date.now();
    c.redisClock.setOffset(offsetMs);
    const after = await lastIds();
    this.clockSteps.push({
      at,
      offsetMs,
      lastEventIds: Object.fromEntries(
        groups.map((group, i) => [group, { before: before[i] ?? null, after: after[i] ?? null }]),
      ),
    });
    return '';
  }

  /**
   * Copies Redis' persisted state, lets `lostMs` of writes go on, crashes Redis and brings it
   * back from the copy; records each stream's last surviving entry id (read before any client can
   * write again), from which the run tells the messages Redis itself lost.
   */
  private async rollbackRedis(lostMs: number): Promise<string> {
    const redis = this.cluster.redis;
    const snapshotAt = Date.now();
    const snapshot = redis.snapshot();
    await sleep(lostMs);
    // The kill time is taken once the old server is dead (inspect runs after the SIGKILL took
    // effect, before anything can write again): taken before the kill, writes Redis executed
    // and answered in between (ids above it) were counted as lost by us, not by Redis.
    let killedAt = 0;
    const { tails, delivered } = await redis.crashToSnapshot(snapshot, (url) => {
      killedAt = Date.now();
      return readStreamTails(url, this.cluster.prefix);
    });
    this.rollbacks.push({ snapshotAt, killedAt, tails, delivered });
    return `${Math.round(killedAt - snapshotAt)} ms of writes lost, ${tails.size} streams survived`;
  }

  /**
   * Asks for a reshard (retrying while no replica answers); a reshard still running is noted, and
   * so is a stream that already has that many shards (200, docs/protocol.md §9.1: the schedule
   * planned from a layout a Redis rollback took back, with the reshard that made it).
   */
  private async reshard(shards: number): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.cluster
          .admin()
          .post<ProtocolErrorBody & { shards?: unknown[] }>(`/v1/streams/${CHAOS_STREAM}/reshard`, {
            shards,
          });
        if (res.status === 202) return 'accepted';
        if (res.status === 200 && res.body?.shards?.length === shards) {
          return `skipped: the stream already has ${shards} shards`;
        }
        const code = res.body?.error?.code;
        if (code === 'RESHARD_IN_PROGRESS') return 'skipped: a reshard is still running';
        if (res.status < 500 || attempt >= 20) {
          throw new Error(`reshard → ${res.status} ${JSON.stringify(res.body)}`);
        }
      } catch (error) {
        if (attempt >= 20) throw error;
      }
      await sleep(500);
    }
  }
}

/** An action in words. */
export function describe(action: ChaosAction): string {
  switch (action.type) {
    case 'start-member':
      return `start ${action.member}`;
    case 'signal-member':
      return `${action.signal} ${action.member}`;
    case 'freeze':
      return `SIGSTOP ${action.member}`;
    case 'thaw':
      return `SIGCONT ${action.member}`;
    case 'black-hole':
      return `cut ${action.member} off from the coordinators`;
    case 'heal':
      return `reconnect ${action.member}${action.cut ? ' (connections reset)' : ''}`;
    case 'delay-responses':
      return action.ms > 0
        ? `delay ${action.member}'s responses by ${action.ms} ms`
        : `${action.member}'s responses on time again`;
    case 'drop-responses':
      return `drop ${action.member}'s responses`;
    case 'stop-coordinator':
      return `${action.signal} coordinator ${action.replica}`;
    case 'start-coordinator':
      return `start coordinator ${action.replica}`;
    case 'restart-redis':
      return `restart Redis${action.crash ? ' (crash)' : ''}`;
    case 'rollback-redis':
      return `crash Redis, restart it without its last ${action.lostMs} ms of writes`;
    case 'set-redis-clock':
      return action.offsetMs === 0
        ? "Redis's wall clock back to true"
        : `Redis's wall clock ${Math.abs(action.offsetMs)} ms ${action.offsetMs > 0 ? 'ahead' : 'behind'}`;
    case 'reshard':
      return `reshard to ${action.shards}`;
    case 'recreate-group':
      return `delete and re-create group ${action.group} across the replicas`;
    case 'stop-idle-group':
      return 'stop every member of the idle group';
    case 'start-idle-group':
      return 'start the idle group again once the new layout is published';
  }
}

/**
 * The last entry id of every stream under `prefix` on the Redis at `url`, and every consumer
 * group's last-delivered-id on each (keyed by {@link deliveredKey}).
 */
async function readStreamTails(
  url: string,
  prefix: string,
): Promise<{ tails: Map<string, string>; delivered: Map<string, string> }> {
  const client = connectRedis(url, { maxRetriesPerRequest: 3 });
  try {
    const tails = new Map<string, string>();
    const delivered = new Map<string, string>();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(
        cursor,
        'MATCH',
        `${prefix}*`,
        'COUNT',
        1000,
        'TYPE',
        'stream',
      );
      cursor = next;
      for (const key of keys) {
        const info = (await client.xinfo('STREAM', key)) as unknown[];
        tails.set(key, info[info.indexOf('last-generated-id') + 1] as string);
        const groups = (await client.xinfo('GROUPS', key)) as unknown[][];
        for (const row of groups) {
          const name = row[row.indexOf('name') + 1] as string;
          delivered.set(
            deliveredKey(name, key),
            row[row.indexOf('last-delivered-id') + 1] as string,
          );
        }
      }
    } while (cursor !== '0');
    return { tails, delivered };
  } finally {
    client.disconnect();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Key of {@link RecordedRollback.delivered}: group names hold no space. */
export function deliveredKey(group: string, shardKey: string): string {
  return `${group} ${shardKey}`;
}
