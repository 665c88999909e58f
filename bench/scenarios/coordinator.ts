import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../../test/support/service-process.js';
import { BenchChild, readRssKb } from '../support/bench-child.js';
import { BenchCoordinator, type BenchContext } from '../support/bench-context.js';
import { meterRedis } from '../support/redis-meter.js';
import { median, type LatencySummary } from '../support/stats.js';

/** One load phase against one coordinator process. */
export interface HeartbeatLoad {
  readonly mode: 'open' | 'closed';
  /** Target rate (open loop) or concurrent requests (closed loop). */
  readonly offered: number;
  readonly perSecond: number;
  readonly latency: LatencySummary;
  readonly errors: number;
  readonly non200: number;
  /** Redis commands per heartbeat (INFO commandstats delta / heartbeats). */
  readonly redisCommandsPerHeartbeat: number;
  readonly redisByCommand: Readonly<Record<string, number>>;
}

/** Results at one member count. */
export interface MemberCountResult {
  readonly members: number;
  readonly groups: number;
  readonly joinMs: number;
  readonly loads: readonly HeartbeatLoad[];
  readonly coordinatorRssKb: number;
}

/** Assignor timings (ms, median of runs after warm-up). */
export interface AssignorTiming {
  readonly assignor: string;
  readonly case: string;
  readonly medianMs: number;
  readonly bestMs: number;
}

/** Convergence of a 50-member group over 500 shards after one member joins. */
export interface ConvergenceRun {
  /** Join → every shard at its target (the joiner holds its shards; no revocation pending). */
  readonly settledMs: number;
  /** Join → group STABLE (unaffected members adopt the new epoch at their next regular heartbeat). */
  readonly stableMs: number;
  readonly affectedMembers: number;
  readonly roundTripsJoiner: number;
  readonly roundTripsOthersMax: number;
}

/** The coordinator scenario's results. */
export interface CoordinatorResult {
  readonly shardsPerStream: number;
  readonly openLoopRate: number;
  readonly closedLoopConcurrency: number;
  readonly seconds: number;
  readonly counts: readonly MemberCountResult[];
  readonly assignors: readonly AssignorTiming[];
  readonly convergence: {
    readonly intervalMs: number;
    readonly runs: readonly ConvergenceRun[];
    readonly settledMedianMs: number;
    readonly stableMedianMs: number;
    readonly maxRoundTrips: number;
  };
}

const GROUPS = 10;
const SHARDS = 100;
const OPEN_RATE = 5000;
const CONCURRENCY = 64;

/**
 * Coordinator: heartbeats/s and latency of one coordinator process at 1,000 / 5,000 / 10,000
 * simulated members over 10 groups (a load generator process with keep-alive HTTP; an open loop
 * at 5,000 hb/s and a closed loop at 64 concurrent requests), Redis commands per heartbeat, its
 * RSS; the assignors at 10,000 shards × 1,000 members; convergence of a 50-member group over 500
 * shards after one member joins.
 */
export async function runCoordinatorBench(ctx: BenchContext): Promise<CoordinatorResult> {
  const counts: MemberCountResult[] = [];
  for (const members of ctx.profile.memberCounts) counts.push(await runMemberCount(ctx, members));
  const assignors = await runAssignors(ctx);
  const convergence = await runConvergence(ctx);
  return {
    shardsPerStream: SHARDS,
    openLoopRate: OPEN_RATE,
    closedLoopConcurrency: CONCURRENCY,
    seconds: ctx.profile.loadSeconds,
    counts,
    assignors,
    convergence,
  };
}

async function runMemberCount(ctx: BenchContext, members: number): Promise<MemberCountResult> {
  const coordinator = await BenchCoordinator.start(
    ctx,
    `hb${members}`,
    { SESSION_TIMEOUT_MS: '600000', HEARTBEAT_INTERVAL_MS: '3000' },
    true,
  );
  const load = await BenchChild.start({
    worker: 'heartbeat-load',
    name: `hb-load-${members}`,
    env: {
      COORDINATOR_URL: coordinator.url,
      COORDINATOR_TOKEN: coordinator.token,
      REDIS_URL: ctx.redisUrl,
      KEY_PREFIX: coordinator.prefix,
    },
  });
  try {
    await coordinator.createStream('hb', SHARDS);
    const groups = Array.from({ length: GROUPS }, (_, i) => `hb-${i}`);
    const joined = await load.request(
      { type: 'join', groups, perGroup: members / GROUPS, stream: 'hb', concurrency: 32 },
      'joined',
      900_000,
    );
    ctx.log(
      `coordinator ${members} members: joined in ${Math.round(joined.ms as number)} ms (${joined.rounds as number} reconcile rounds, ${joined.errors as number} errors)`,
    );
    const loads: HeartbeatLoad[] = [];
    for (const [mode, offered] of [
      ['open', OPEN_RATE],
      ['closed', CONCURRENCY],
    ] as const) {
      const durationMs = ctx.profile.loadSeconds * 1000;
      // a triggered CPU profile (with --cpu-prof) covers the closed-loop phase only
      if (mode === 'closed') coordinator.toggleProfile();
      const { result, redis } = await meterRedis(ctx.redis, () =>
        load.request(
          { type: 'load', rate: mode === 'open' ? offered : 0, concurrency: offered, durationMs },
          'loaded',
          durationMs + 120_000,
        ),
      );
      if (mode === 'closed') coordinator.toggleProfile();
      const statuses = result.statuses as Record<string, number>;
      const count = result.count as number;
      loads.push({
        mode,
        offered,
        perSecond: result.perSecond as number,
        latency: result.latency as LatencySummary,
        errors: result.errors as number,
        non200: Object.entries(statuses).reduce((n, [s, c]) => (s === '200' ? n : n + c), 0),
        redisCommandsPerHeartbeat: redis.commands / Math.max(1, count),
        redisByCommand: Object.fromEntries(
          Object.entries(redis.byCommand).map(([k, v]) => [
            k,
            Math.round((v / Math.max(1, count)) * 100) / 100,
          ]),
        ),
      });
      const l = loads.at(-1) as HeartbeatLoad;
      ctx.log(
        `coordinator ${members} members ${mode} ${offered}: ${Math.round(l.perSecond)} hb/s, p50 ${l.latency.p50.toFixed(2)} ms, p99 ${l.latency.p99.toFixed(2)} ms, ${l.redisCommandsPerHeartbeat.toFixed(2)} Redis commands/hb`,
      );
    }
    const coordinatorRssKb = readRssKb(coordinator.process.pid ?? -1);
    return { members, groups: GROUPS, joinMs: joined.ms as number, loads, coordinatorRssKb };
  } finally {
    await load.stop();
    await coordinator.stop();
  }
}

interface AssignorModule {
  UniformAssignor: new () => AssignorLike;
  RangeAssignor: new () => AssignorLike;
}
interface AssignorLike {
  readonly name: string;
  assign(input: AssignorInputLike): Map<string, ReadonlyMap<string, readonly number[]>>;
}
interface AssignorInputLike {
  readonly members: ReadonlyMap<
    string,
    {
      memberId: string;
      instanceId: null;
      rackId: null;
      subscribedStreams: readonly string[];
      previousTarget: ReadonlyMap<string, readonly number[]>;
    }
  >;
  readonly streams: ReadonlyMap<string, readonly number[]>;
}

/** The built assignors (`apps/coordinator/dist`, made by `npm run build`). */
async function loadAssignors(): Promise<AssignorModule> {
  const file = join(repoRoot(), 'apps/coordinator/dist/core/assignors/index.js');
  if (!existsSync(file))
    throw new Error(`${file} is missing: run "npm run build" first (npm run bench does)`);
  return (await import(pathToFileURL(file).href)) as AssignorModule;
}

async function runAssignors(ctx: BenchContext): Promise<AssignorTiming[]> {
  const { UniformAssignor, RangeAssignor } = await loadAssignors();
  const streams = new Map(
    Array.from(
      { length: 10 },
      (_, i) => [`s${i}`, Array.from({ length: 1000 }, (_, k) => k)] as const,
    ),
  );
  const subs = [...streams.keys()];
  const input = (
    count: number,
    previous: Map<string, ReadonlyMap<string, readonly number[]>> = new Map(),
  ): AssignorInputLike => ({
    members: new Map(
      Array.from({ length: count }, (_, i) => {
        const memberId = `member-${String(i).padStart(5, '0')}`;
        return [
          memberId,
          {
            memberId,
            instanceId: null,
            rackId: null,
            subscribedStreams: subs,
            previousTarget: previous.get(memberId) ?? new Map(),
          },
        ] as const;
      }),
    ),
    streams,
  });
  const out: AssignorTiming[] = [];
  const time = (assignor: AssignorLike, label: string, data: AssignorInputLike): void => {
    for (let i = 0; i < 3; i++) assignor.assign(data);
    const runs: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t = performance.now();
      assignor.assign(data);
      runs.push(performance.now() - t);
    }
    out.push({
      assignor: assignor.name,
      case: label,
      medianMs: median(runs),
      bestMs: Math.min(...runs),
    });
    ctx.log(`assignor ${assignor.name} ${label}: ${median(runs).toFixed(1)} ms`);
  };
  const uniform = new UniformAssignor();
  time(uniform, 'fresh (no previous targets)', input(1000));
  time(
    uniform,
    'sticky: one member joined (previous = 999-member target)',
    input(1000, uniform.assign(input(999))),
  );
  time(
    uniform,
    'sticky: one member left (previous = 1,001-member target)',
    input(1000, uniform.assign(input(1001))),
  );
  time(new RangeAssignor(), 'fresh', input(1000));
  return out;
}

async function runConvergence(ctx: BenchContext): Promise<CoordinatorResult['convergence']> {
  const intervalMs = 3000;
  const coordinator = await BenchCoordinator.start(ctx, 'conv', {
    HEARTBEAT_INTERVAL_MS: String(intervalMs),
    SESSION_TIMEOUT_MS: '60000',
  });
  const load = await BenchChild.start({
    worker: 'heartbeat-load',
    name: 'conv-load',
    env: {
      COORDINATOR_URL: coordinator.url,
      COORDINATOR_TOKEN: coordinator.token,
      REDIS_URL: ctx.redisUrl,
      KEY_PREFIX: coordinator.prefix,
    },
  });
  const runs: ConvergenceRun[] = [];
  try {
    await coordinator.createStream('conv', 500);
    for (let rep = 0; rep < ctx.profile.reps; rep++) {
      const r = await load.request(
        { type: 'converge', group: `conv-${rep}`, stream: 'conv', members: 50, intervalMs },
        'converged',
        120_000,
      );
      runs.push({
        settledMs: r.settledMs as number,
        stableMs: r.stableMs as number,
        affectedMembers: r.affectedMembers as number,
        roundTripsJoiner: r.roundTripsJoiner as number,
        roundTripsOthersMax: r.roundTripsOthersMax as number,
      });
      ctx.log(
        `convergence rep ${rep + 1}: shards settled in ${Math.round(r.settledMs as number)} ms, STABLE in ${Math.round(r.stableMs as number)} ms, ${r.affectedMembers as number} members affected, round trips joiner ${r.roundTripsJoiner as number}, others ≤ ${r.roundTripsOthersMax as number}`,
      );
    }
  } finally {
    await load.stop();
    await coordinator.stop();
  }
  return {
    intervalMs,
    runs,
    settledMedianMs: median(runs.map((r) => r.settledMs)),
    stableMedianMs: median(runs.map((r) => r.stableMs)),
    maxRoundTrips: Math.max(
      ...runs.map((r) => Math.max(r.roundTripsJoiner, r.roundTripsOthersMax)),
    ),
  };
}
