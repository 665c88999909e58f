import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import type { DescribedGroup, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../test/support/coordinator-process.js';
import { checkHandled, type HandledLine, readHandled } from '../../test/support/handled-records.js';
import { KeyedLoad, type PublishSample } from '../../test/support/keyed-load.js';
import { resolveRedis } from '../../test/support/redis-resolve.js';
import { createTempDir } from '../../test/support/temp-dir.js';
import { waitFor } from '../../test/support/wait.js';
import { WorkerProcess } from '../../test/support/worker-process.js';
import { connectRedis } from '../../test/support/redis-client.js';

/**
 * Benchmark scenario (measured, not asserted): an 8 → 16 reshard under a steady keyed load.
 * A real coordinator, real example-worker processes and a producer using the library's routed
 * publisher; the workers record every handled message. Reports producer publish latency and
 * consumer throughput before, during and after the change, how long the change took, how long
 * consumer throughput took to return to the steady level after the old shards drained, and how
 * many messages were lost or handled out of per-key order.
 */

/** Options of {@link runReshardBench}; every field has a default. */
export interface ReshardBenchOptions {
  /** Redis to use; default: `REDIS_URL`, else a local one (started if needed). */
  readonly redisUrl?: string;
  /** Producer rate, messages per second. Default 5000. */
  readonly rate?: number;
  readonly fromShards?: number;
  readonly toShards?: number;
  /** Example-worker processes. Default 3. */
  readonly workers?: number;
  /** Distinct routing keys. Default 1000. */
  readonly keys?: number;
  /** Steady phase measured before the reshard. Default 5000 ms (after a 2000 ms warm-up). */
  readonly steadyMs?: number;
  /** Phase measured after the reshard completed. Default 5000 ms. */
  readonly afterMs?: number;
  /** Simulated work per message in the workers. Default 0. */
  readonly handlerDelayMs?: number;
  /** `strict` (default) or `relaxed`. */
  readonly mode?: 'strict' | 'relaxed';
  /** The publisher's `retryDelayMs` after STALE_ROUTING (library default 50 ms). */
  readonly retryDelayMs?: number;
  /** Extra coordinator environment (HEARTBEAT_INTERVAL_MS, RESHARD_POLL_MS, ...). */
  readonly coordinatorEnv?: Readonly<Record<string, string>>;
  /** Keep the workers' handled-message records in this directory (default: a temp dir, removed). */
  readonly recordDir?: string;
  /** Progress lines. Default: none. */
  readonly log?: (line: string) => void;
}

/** Producer and consumer figures of one phase. */
export interface PhaseStats {
  readonly durationMs: number;
  readonly published: number;
  /** Publish latency per message (the `publishBatch` call carrying it), ms. */
  readonly publishP50Ms: number;
  readonly publishP99Ms: number;
  readonly publishMaxMs: number;
  /** Messages handled per second (first handlings, by handler end time). */
  readonly consumedPerSec: number;
}

/** What {@link runReshardBench} measured. */
export interface ReshardBenchResult {
  readonly rate: number;
  readonly fromShards: number;
  readonly toShards: number;
  readonly workers: number;
  readonly mode: 'strict' | 'relaxed';
  readonly before: PhaseStats;
  /** From the reshard request until `resharding` became `null`. */
  readonly during: PhaseStats;
  readonly after: PhaseStats;
  /** Reshard request → every old shard drained by the group (as seen by polling the status). */
  readonly drainMs: number;
  /** Reshard request → completed (old shards removed, `resharding: null`). */
  readonly reshardMs: number;
  /**
   * Old shards drained → the first 500 ms window whose consumer throughput is at least 90% of the
   * steady level (0 when it never dropped below).
   */
  readonly recoveryMs: number;
  /** Lowest and highest consumer throughput of a 500 ms window during the change, per second. */
  readonly duringMinPerSec: number;
  readonly duringMaxPerSec: number;
  readonly sent: number;
  readonly handled: number;
  readonly duplicates: number;
  readonly lost: number;
  /** Keys whose messages were first handled out of sequence order. */
  readonly reordered: number;
  readonly producerErrors: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Runs the scenario once and returns its measurements (everything it started is stopped). */
export async function runReshardBench(
  options: ReshardBenchOptions = {},
): Promise<ReshardBenchResult> {
  const rate = options.rate ?? 5000;
  const fromShards = options.fromShards ?? 8;
  const toShards = options.toShards ?? 16;
  const workerCount = options.workers ?? 3;
  const mode = options.mode ?? 'strict';
  const log = options.log ?? (() => undefined);
  const cleanups: Array<() => Promise<void> | void> = [];
  try {
    let url = options.redisUrl ?? process.env.REDIS_URL;
    if (!url) {
      const resolved = await resolveRedis({ log });
      cleanups.push(() => resolved.stop());
      url = resolved.url;
    }
    const prefix = `bench-reshard-${randomBytes(3).toString('hex')}`;
    const redis = connectRedis(url);
    cleanups.push(async () => {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await redis.unlink(...keys);
      } while (cursor !== '0');
      redis.disconnect();
    });
    const temp = options.recordDir === undefined ? createTempDir('bench-reshard') : undefined;
    if (temp) cleanups.push(() => temp.remove());
    const recordDir = options.recordDir ?? (temp as { path: string }).path;

    const coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: url,
      env: { STREAMS: `orders:${fromShards}`, ...options.coordinatorEnv },
      readyTimeoutMs: 60_000,
    });
    cleanups.push(async () => void (await coordinator.stop()));
    const api = new CoordinatorApi(coordinator.url, TEST_TOKENS.admin);
    const files = Array.from({ length: workerCount }, (_, i) =>
      join(recordDir, `worker-${i}.jsonl`),
    );
    const workers = await Promise.all(
      files.map((file) =>
        WorkerProcess.start({
          coordinatorUrl: coordinator.url,
          group: 'bench',
          redisUrl: url,
          recordFile: file,
          env: { HANDLER_DELAY_MS: String(options.handlerDelayMs ?? 0) },
          readyTimeoutMs: 60_000,
        }),
      ),
    );
    cleanups.push(async () => void (await Promise.all(workers.map((w) => w.stop()))));
    await waitFor(
      async () => {
        const g = (await api.get<DescribedGroup>('/v1/groups/bench')).body;
        return g.state === 'STABLE' && g.members.length === workerCount;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 100,
        message: `group bench STABLE with ${workerCount} members`,
        retryErrors: true,
      },
    );
    log(`coordinator and ${workerCount} workers up; ${fromShards} shards`);

    const connection = createRedisConnection(url, 'command');
    cleanups.push(() => connection.disconnect());
    const load = new KeyedLoad({
      connection,
      coordinatorUrl: coordinator.url,
      token: TEST_TOKENS.member,
      stream: 'orders',
      keys: options.keys ?? 1000,
      rate,
      tickMs: 10,
      ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
    });
    cleanups.push(() => load.stop());
    await load.start();
    await sleep(2000);
    const tBefore = Date.now();
    log(
      `steady load of ${rate} msg/s; measuring ${options.steadyMs ?? 5000} ms before the reshard`,
    );
    await sleep(options.steadyMs ?? 5000);

    const tRequest = Date.now();
    const accepted = await api.post<StreamRouting>('/v1/streams/orders/reshard', {
      shards: toShards,
      mode,
    });
    if (accepted.status !== 202)
      throw new Error(`reshard refused: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    let tDrained = 0;
    let tDone = 0;
    while (tDone === 0) {
      const status = (await api.get<StreamRouting>('/v1/streams/orders')).body.resharding;
      const now = Date.now();
      if (status === null) tDone = now;
      if (
        tDrained === 0 &&
        (status === null ||
          status.drain.every((d) => d.drainedGroups.includes('bench') || d.removed))
      ) {
        tDrained = now;
      }
      if (now - tRequest > 120_000)
        throw new Error(`reshard did not complete in 120 s: ${JSON.stringify(status)}`);
      await sleep(25);
    }
    log(
      `reshard ${fromShards} → ${toShards}: drained after ${tDrained - tRequest} ms, completed after ${tDone - tRequest} ms`,
    );
    await sleep(options.afterMs ?? 5000);
    const tEnd = Date.now();
    await load.stop();
    await waitFor(() => checkHandled(files, new Map(load.seqs)).missing === 0, {
      timeoutMs: 60_000,
      intervalMs: 100,
      message: 'every message handled',
      retryErrors: true,
    }).catch(() => undefined);

    const check = checkHandled(files, new Map(load.seqs));
    const firsts = firstHandlings(readHandled(files));
    const steady = phase(load.samples, firsts, tBefore, tRequest);
    const series = windows(firsts, tRequest, tEnd, 500);
    const threshold = 0.9 * steady.consumedPerSec;
    const recovered = series.find((w) => w.start >= tDrained - 500 && w.perSec >= threshold);
    const duringSeries = series.filter((w) => w.start >= tRequest && w.start + 500 <= tDone);
    return {
      rate,
      fromShards,
      toShards,
      workers: workerCount,
      mode,
      before: steady,
      during: phase(load.samples, firsts, tRequest, tDone),
      after: phase(load.samples, firsts, tDone, tEnd),
      drainMs: tDrained - tRequest,
      reshardMs: tDone - tRequest,
      recoveryMs: recovered ? Math.max(0, recovered.start + 500 - tDrained) : Number.NaN,
      duringMinPerSec: duringSeries.length
        ? Math.min(...duringSeries.map((w) => w.perSec))
        : Number.NaN,
      duringMaxPerSec: duringSeries.length
        ? Math.max(...duringSeries.map((w) => w.perSec))
        : Number.NaN,
      sent: load.sent,
      handled: check.distinct,
      duplicates: check.duplicates,
      lost: check.missing,
      reordered: check.orderViolations.length,
      producerErrors: load.errors.length,
    };
  } finally {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch {
        // best effort
      }
    }
  }
}

/** End times (wall clock ms) of the first handling of each (key, seq). */
function firstHandlings(lines: readonly HandledLine[]): number[] {
  const first = new Map<string, number>();
  for (const l of lines) {
    const id = `${l.k}#${l.q}`;
    const seen = first.get(id);
    if (seen === undefined || l.t1 < seen) first.set(id, l.t1);
  }
  return [...first.values()].sort((a, b) => a - b);
}

function phase(
  samples: readonly PublishSample[],
  firsts: readonly number[],
  from: number,
  to: number,
): PhaseStats {
  const latencies: number[] = [];
  let published = 0;
  for (const s of samples) {
    if (s.at < from || s.at >= to) continue;
    published += s.messages;
    for (let i = 0; i < s.messages; i++) latencies.push(s.ms);
  }
  latencies.sort((a, b) => a - b);
  const q = (p: number): number =>
    latencies.length
      ? round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] as number)
      : Number.NaN;
  const consumed = countBetween(firsts, from, to);
  return {
    durationMs: to - from,
    published,
    publishP50Ms: q(0.5),
    publishP99Ms: q(0.99),
    publishMaxMs: latencies.length ? round(latencies.at(-1) as number) : Number.NaN,
    consumedPerSec: to > from ? Math.round((consumed * 1000) / (to - from)) : 0,
  };
}

function windows(
  firsts: readonly number[],
  from: number,
  to: number,
  size: number,
): Array<{ start: number; perSec: number }> {
  const out: Array<{ start: number; perSec: number }> = [];
  for (let start = from; start + size <= to; start += size) {
    out.push({
      start,
      perSec: Math.round((countBetween(firsts, start, start + size) * 1000) / size),
    });
  }
  return out;
}

function countBetween(sorted: readonly number[], from: number, to: number): number {
  return lowerBound(sorted, to) - lowerBound(sorted, from);
}

function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

/**
 * Standalone runner: `node .tools/bench/scenarios/reshard.js` (after `npm run build`). Env:
 * `BENCH_RATE`, `BENCH_FROM`, `BENCH_TO`, `BENCH_WORKERS`, `BENCH_STEADY_MS`, `BENCH_AFTER_MS`,
 * `BENCH_HANDLER_DELAY_MS`, `BENCH_MODE`, `BENCH_RECORD_DIR` (keep the records),
 * `BENCH_RETRY_DELAY_MS`, `REDIS_URL`.
 * Prints the result as JSON.
 */
async function main(): Promise<void> {
  const env = process.env;
  const num = (name: string): number | undefined => (env[name] ? Number(env[name]) : undefined);
  const result = await runReshardBench({
    ...(num('BENCH_RATE') !== undefined ? { rate: num('BENCH_RATE') } : {}),
    ...(num('BENCH_FROM') !== undefined ? { fromShards: num('BENCH_FROM') } : {}),
    ...(num('BENCH_TO') !== undefined ? { toShards: num('BENCH_TO') } : {}),
    ...(num('BENCH_WORKERS') !== undefined ? { workers: num('BENCH_WORKERS') } : {}),
    ...(num('BENCH_STEADY_MS') !== undefined ? { steadyMs: num('BENCH_STEADY_MS') } : {}),
    ...(num('BENCH_AFTER_MS') !== undefined ? { afterMs: num('BENCH_AFTER_MS') } : {}),
    ...(num('BENCH_HANDLER_DELAY_MS') !== undefined
      ? { handlerDelayMs: num('BENCH_HANDLER_DELAY_MS') }
      : {}),
    ...(env.BENCH_MODE === 'relaxed' ? { mode: 'relaxed' as const } : {}),
    ...(env.BENCH_RECORD_DIR ? { recordDir: env.BENCH_RECORD_DIR } : {}),
    ...(num('BENCH_RETRY_DELAY_MS') !== undefined
      ? { retryDelayMs: num('BENCH_RETRY_DELAY_MS') }
      : {}),
    log: (line) => void process.stderr.write(`${line}\n`),
  });
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exit(1);
  });
}
