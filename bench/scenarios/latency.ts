import { BenchChild } from '../support/bench-child.js';
import { BenchCoordinator, type BenchContext } from '../support/bench-context.js';
import { median, ratio, summarize, type LatencySummary } from '../support/stats.js';
import { waitForValue } from '../../test/support/wait.js';

/** One measured run: publish → handler start latencies (ms). */
export interface LatencyRun extends LatencySummary {
  readonly rate: number;
  readonly published: number;
}

/** Ours vs the raw loop at one rate. */
export interface LatencyCase {
  readonly rate: number;
  readonly ours: readonly LatencyRun[];
  readonly raw: readonly LatencyRun[];
  readonly oursP50: number;
  readonly oursP99: number;
  readonly rawP50: number;
  readonly rawP99: number;
  /** Median p99 ours / median p99 raw. */
  readonly p99Ratio: number;
}

/** The latency scenario's results. */
export interface LatencyResult {
  readonly shards: number;
  readonly seconds: number;
  readonly cases: readonly LatencyCase[];
}

const SHARDS = 8;

/**
 * Latency: a paced producer process publishes at 1,000 and 10,000 msg/s (payloads carry their
 * publish time); one member process (batch 100) and one raw-loop process (COUNT 100) record
 * publish → handler start. Runs alternate ours/raw; each has a 0.5 s warm-up that is not recorded.
 */
export async function runLatencyBench(ctx: BenchContext): Promise<LatencyResult> {
  const coordinator = await BenchCoordinator.start(ctx, 'lat');
  const children: BenchChild[] = [];
  try {
    const oursStream = await coordinator.createStream('lat-ours', SHARDS);
    const rawStream = await coordinator.createStream('lat-raw', SHARDS);
    const common = {
      COORDINATOR_URL: coordinator.url,
      COORDINATOR_TOKEN: coordinator.token,
      REDIS_URL: ctx.redisUrl,
    };
    const [member, raw, producer] = await Promise.all([
      BenchChild.start({
        worker: 'member-app',
        name: 'lat-member',
        env: {
          ...common,
          GROUP: 'lat',
          BENCH_STREAM: 'lat-ours',
          ...ctx.profileEnv('latency-member'),
        },
      }),
      BenchChild.start({
        worker: 'raw-consumer',
        name: 'lat-raw',
        env: { ...common, GROUP: 'lat', SHARD_KEYS: rawStream.keys.join(',') },
      }),
      BenchChild.start({ worker: 'rate-producer', name: 'lat-producer', env: common }),
    ]);
    children.push(member, raw, producer);
    await waitForValue(
      async () => {
        const s = await member.request({ type: 'status' }, 'status');
        return (s.held as number[]).length === SHARDS ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100, message: 'the latency member to hold every shard' },
    );
    const cases: LatencyCase[] = [];
    for (const rate of ctx.profile.latencyRates) {
      const ours: LatencyRun[] = [];
      const rawRuns: LatencyRun[] = [];
      for (let rep = 0; rep < ctx.profile.reps; rep++) {
        const order: Array<[BenchChild, string, LatencyRun[]]> =
          rep % 2 === 0
            ? [
                [member, oursStream.stream, ours],
                [raw, rawStream.stream, rawRuns],
              ]
            : [
                [raw, rawStream.stream, rawRuns],
                [member, oursStream.stream, ours],
              ];
        for (const [consumer, stream, runs] of order) {
          await producer.request(
            { type: 'produce', stream, rate, durationMs: 500 },
            'produced',
            60_000,
          );
          await consumer.request({ type: 'latency-reset' }, 'latency-reset');
          const produced = await producer.request(
            { type: 'produce', stream, rate, durationMs: ctx.profile.latencySeconds * 1000 },
            'produced',
            ctx.profile.latencySeconds * 1000 + 60_000,
          );
          const published = produced.count as number;
          await waitForValue(
            async () => {
              const s = await consumer.request({ type: 'status' }, 'status');
              return (s.handled as number) > 0 ? true : undefined;
            },
            { timeoutMs: 10_000, intervalMs: 20, message: `${published} latency samples` },
          );
          await new Promise((r) => setTimeout(r, 200));
          const report = await consumer.request({ type: 'latency-report' }, 'latency', 60_000);
          const samples = report.samples as number[];
          runs.push({ rate, published, ...summarize(samples) });
          for (const key of [...oursStream.keys, ...rawStream.keys])
            await ctx.redis.xtrim(key, 'MAXLEN', '~', 1000);
        }
        ctx.log(
          `latency ${rate}/s rep ${rep + 1}: ours p50 ${ours.at(-1)?.p50.toFixed(2)} p99 ${ours.at(-1)?.p99.toFixed(2)} ms; raw p50 ${rawRuns.at(-1)?.p50.toFixed(2)} p99 ${rawRuns.at(-1)?.p99.toFixed(2)} ms`,
        );
      }
      const oursP99 = median(ours.map((r) => r.p99));
      const rawP99 = median(rawRuns.map((r) => r.p99));
      cases.push({
        rate,
        ours,
        raw: rawRuns,
        oursP50: median(ours.map((r) => r.p50)),
        oursP99,
        rawP50: median(rawRuns.map((r) => r.p50)),
        rawP99,
        p99Ratio: ratio(oursP99, rawP99),
      });
    }
    return { shards: SHARDS, seconds: ctx.profile.latencySeconds, cases };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await coordinator.stop();
  }
}
