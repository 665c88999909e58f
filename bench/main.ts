import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../test/support/service-process.js';
import { runCoordinatorBench } from './scenarios/coordinator.js';
import { runHandlersBench } from './scenarios/handlers.js';
import { runLatencyBench } from './scenarios/latency.js';
import { runRebalanceBench } from './scenarios/rebalance.js';
import { runReshardBench } from './scenarios/reshard.js';
import { runThroughputBench } from './scenarios/throughput.js';
import type { BenchContext } from './support/bench-context.js';
import { FULL_PROFILE, QUICK_PROFILE, type BenchProfile } from './support/bench-profile.js';
import {
  type BenchNode,
  parseNodeFlag,
  readListedMajors,
  resolveBenchNodes,
} from './support/bench-nodes.js';
import { benchRedis } from './support/bench-redis.js';
import { findCpuProfiles, summarizeCpuProfile } from './support/cpu-profile-summary.js';
import { nodeComparisonSection } from './support/node-comparison.js';
import { machineInfo } from './support/machine-info.js';
import { type BenchReport, renderMarkdown, throughputTable } from './support/report.js';
import type { RawClientName } from './workers/raw-clients.js';
import { connectRedis } from '../test/support/redis-client.js';

/**
 * `npm run bench` (quick profile) / `npm run bench -- --full`: every scenario against one Redis in
 * one invocation; writes `docs/benchmarks.md` and `docs/benchmarks.json`.
 * Flags: `--only=throughput,latency,rebalance,coordinator,reshard,handlers` (a subset; the docs are then
 * written to `.tmp/bench/` instead, so a partial run never replaces the full page), `--cpu-prof`
 * (CPU profiles of a member, of a raw-loop process and of the coordinators under load, in
 * `.tmp/bench-profiles/`, with a summary printed at the end), `--render` (only re-render
 * `docs/benchmarks.md` from `docs/benchmarks.json` and `bench/benchmarks-notes.md`), `--node=20,24`
 * (the throughput and latency scenarios run their consumer, raw-loop and producer processes on
 * each of these Node releases of `.ci/node-versions`, fetched by `.ci/fetch-node`, interleaved in
 * the same run; the runner, the coordinators and the other scenarios stay on the runner's Node). Environment
 * overrides for quick experiments: BENCH_MESSAGES, BENCH_REPS, BENCH_WARMUP (throughput warm-up,
 * batches per process), BENCH_BATCHES, BENCH_PROCS, BENCH_MEMBERS, BENCH_SKIP_PEERS=1 (no peers),
 * BENCH_COLD_MESSAGES, BENCH_COLD_REPS (cold throughput), BENCH_RAW_CLIENTS (a subset of
 * ioredis5,ioredis6,ioredis6-resp3,node-redis), BENCH_SKIP_COLD=1 / BENCH_SKIP_WARM=1,
 * BENCH_READER_CLIENT (the members' `readerClient`, default theirs: 'direct'),
 * BENCH_CPU_PROF_INTERVAL_US (sampling interval of `--cpu-prof`, default 500); BENCH_REDIS_URL to
 * use a given Redis.
 */
const SCENARIOS = [
  'throughput',
  'latency',
  'rebalance',
  'coordinator',
  'reshard',
  'handlers',
] as const;
type Scenario = (typeof SCENARIOS)[number];

/** A flag or scenario name the runner does not know. */
class UnknownScenarioError extends Error {
  override readonly name = 'UnknownScenarioError';
  constructor(what: string) {
    super(
      `npm run bench: unknown argument "${what}"; use --full, --cpu-prof, --render, --node=20,24, --only=${SCENARIOS.join(',')}`,
    );
  }
}

const args = process.argv.slice(2);
const full = args.includes('--full');
const profiling = args.includes('--cpu-prof');
const onlyArg = args.find((a) => a.startsWith('--only='));
const only = onlyArg?.slice('--only='.length).split(',') as Scenario[] | undefined;
for (const name of only ?? []) {
  if (!SCENARIOS.includes(name)) throw new UnknownScenarioError(name);
}
const unknownFlag = args.find(
  (a) =>
    !['--full', '--cpu-prof', '--render'].includes(a) &&
    !a.startsWith('--only=') &&
    !a.startsWith('--node='),
);
if (unknownFlag) throw new UnknownScenarioError(unknownFlag);
const nodeMajors = parseNodeFlag(args, readListedMajors(repoRoot()));

function listEnv(name: string): number[] | undefined {
  const raw = process.env[name];
  return raw ? raw.split(',').map(Number) : undefined;
}

function profileFromEnv(base: BenchProfile): BenchProfile {
  const messages = process.env.BENCH_MESSAGES ? Number(process.env.BENCH_MESSAGES) : undefined;
  return {
    ...base,
    ...(messages ? { messages, peerMessages: messages } : {}),
    ...(process.env.BENCH_REPS
      ? { reps: Number(process.env.BENCH_REPS), throughputReps: Number(process.env.BENCH_REPS) }
      : {}),
    ...(process.env.BENCH_WARMUP
      ? { warmupBatchesPerProcess: Number(process.env.BENCH_WARMUP) }
      : {}),
    ...(process.env.BENCH_COLD_MESSAGES
      ? { coldMessages: Number(process.env.BENCH_COLD_MESSAGES) }
      : {}),
    ...(process.env.BENCH_COLD_REPS ? { coldReps: Number(process.env.BENCH_COLD_REPS) } : {}),
    ...(listEnv('BENCH_BATCHES') ? { batchSizes: listEnv('BENCH_BATCHES') as number[] } : {}),
    ...(listEnv('BENCH_PROCS') ? { processCounts: listEnv('BENCH_PROCS') as number[] } : {}),
    ...(listEnv('BENCH_MEMBERS') ? { memberCounts: listEnv('BENCH_MEMBERS') as number[] } : {}),
  };
}

function readNotes(root: string): string {
  const notesFile = join(root, 'bench', 'benchmarks-notes.md');
  return existsSync(notesFile) ? readFileSync(notesFile, 'utf8') : '';
}

/** `--render`: the page again from the last full run's JSON (after editing the notes). */
function renderOnly(root: string): void {
  const report = JSON.parse(
    readFileSync(join(root, 'docs', 'benchmarks.json'), 'utf8'),
  ) as BenchReport;
  writeFileSync(join(root, 'docs', 'benchmarks.md'), renderMarkdown(report, readNotes(root)));
  process.stderr.write('re-rendered docs/benchmarks.md from docs/benchmarks.json\n');
}

async function main(): Promise<void> {
  if (args.includes('--render')) {
    renderOnly(repoRoot());
    return;
  }
  const log = (line: string): void =>
    void process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  const root = repoRoot();
  const profile = profileFromEnv(full ? FULL_PROFILE : QUICK_PROFILE);
  const nodes: BenchNode[] | undefined = nodeMajors
    ? resolveBenchNodes(root, nodeMajors)
    : undefined;
  if (nodes) log(`Node releases: ${nodes.map((n) => `${n.version} (${n.execPath})`).join(', ')}`);
  const started = new Date();
  const resolved = await benchRedis(log);
  const redis = connectRedis(resolved.url);
  const profileDir = join(root, '.tmp', 'bench-profiles');
  if (profiling) mkdirSync(profileDir, { recursive: true });
  const ctx: BenchContext = {
    redisUrl: resolved.url,
    redis,
    profile,
    log,
    ...(nodes ? { nodes } : {}),
    profileEnv: (label): Record<string, string> =>
      profiling
        ? {
            NODE_OPTIONS: `--import=${pathToFileURL(join(root, '.tools/bench/workers/cpu-profile-preload.js')).href}`,
            BENCH_CPU_PROF_DIR: profileDir,
            BENCH_CPU_PROF_LABEL: label,
          }
        : {},
  };
  const failures: Record<string, string> = {};
  const results: Partial<Pick<BenchReport, Scenario>> = {};
  try {
    const machine = await machineInfo(redis);
    log(
      `profile ${profile.name}; Node ${machine.versions.node}; Redis ${resolved.url} (${resolved.source}); load average ${machine.loadAverageAtStart}`,
    );
    const run = async <K extends Scenario>(
      name: K,
      fn: () => Promise<NonNullable<BenchReport[K]>>,
    ): Promise<void> => {
      if (only && !only.includes(name)) return;
      const t0 = Date.now();
      log(`${name}: start`);
      try {
        (results as Record<string, unknown>)[name] = await fn();
      } catch (error) {
        failures[name] = error instanceof Error ? (error.stack ?? error.message) : String(error);
        log(`${name}: FAILED: ${failures[name]}`);
      }
      log(`${name}: ${Math.round((Date.now() - t0) / 1000)} s`);
    };
    await run('throughput', () => runThroughputBench(ctx));
    // latency against the fastest raw loop of the throughput scenario (warm, batch 100, 1 process)
    const fastest = results.throughput?.cases.find(
      (c) => c.regime === 'warm' && c.batchSize === 100 && c.processes === 1,
    )?.fastest;
    await run('latency', () =>
      runLatencyBench(ctx, fastest ?? (process.env.BENCH_LATENCY_RAW_CLIENT as RawClientName)),
    );
    await run('rebalance', () => runRebalanceBench(ctx));
    await run('coordinator', () => runCoordinatorBench(ctx));
    await run('reshard', () =>
      runReshardBench({
        redisUrl: ctx.redisUrl,
        log,
        ...(profile.name === 'quick' ? { rate: 2000, steadyMs: 3000, afterMs: 3000 } : {}),
      }),
    );
    await run('handlers', () => runHandlersBench(ctx));
    const finished = new Date();
    const report: BenchReport = {
      startedAt: started.toISOString(),
      finishedAt: finished.toISOString(),
      durationS: (finished.getTime() - started.getTime()) / 1000,
      profile,
      machine,
      loadAverageAtEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100,
      ...results,
      failures,
    };
    const notes = readNotes(root);
    const outDir = only ? join(root, '.tmp', 'bench') : join(root, 'docs');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, 'benchmarks.json'), `${JSON.stringify(report, null, 2)}\n`);
    writeFileSync(join(outDir, 'benchmarks.md'), renderMarkdown(report, notes));
    log(`wrote ${join(outDir, 'benchmarks.md')} and benchmarks.json`);
    if (report.throughput) {
      // the table to paste (README, issues), with the machine's load next to it
      process.stdout.write(
        `\nThroughput, ${profile.name} profile, runner on Node ${machine.versions.node}${nodes ? `, consumers on ${nodes.map((n) => n.version).join(' and ')}` : ''}, load average ${machine.loadAverageAtStart} → ${report.loadAverageAtEnd}, ${Math.round(report.durationS)} s:\n\n${throughputTable(report.throughput)}\n`,
      );
    }
    const comparison = nodeComparisonSection(report.throughput, report.latency);
    if (comparison.length > 0) process.stdout.write(`\n${comparison.join('\n')}\n`);
    if (profiling) {
      for (const file of findCpuProfiles(profileDir).slice(0, 4)) {
        process.stdout.write(`\n${file}\n`);
        for (const e of summarizeCpuProfile(file, 15, root))
          process.stdout.write(`${e.selfPct.toFixed(1).padStart(5)}%  ${e.fn}  ${e.where}\n`);
      }
    }
  } finally {
    redis.disconnect();
    await resolved.stop();
  }
  if (Object.keys(failures).length > 0) process.exitCode = 1;
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error: unknown) => {
    process.stderr.write(
      `benchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  },
);
