import type { RawClientName } from '../workers/raw-clients.js';
import { BenchChild } from '../support/bench-child.js';
import { BenchCoordinator, type BenchContext, type StreamInfo } from '../support/bench-context.js';
import { type BenchNode, interleaveBySlot } from '../support/bench-nodes.js';
import type { NodeLabel } from './throughput.js';
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
  /** `--node=`: the Node release the member, raw-loop and producer processes ran on. */
  readonly node?: NodeLabel;
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
  /** The raw loop's client (the fastest of the throughput scenario at batch 100, 1 process). */
  readonly rawClient?: RawClientName;
  /** `--node=`: the releases measured, in the order given (one case per rate and release). */
  readonly nodes?: readonly NodeLabel[];
}

const SHARDS = 8;

/** The processes and streams of one Node release (the runner's own without `--node=`). */
interface LatencySlot {
  readonly node: BenchNode | undefined;
  readonly member: BenchChild;
  readonly raw: BenchChild;
  readonly producer: BenchChild;
  readonly oursStream: StreamInfo;
  readonly rawStream: StreamInfo;
}

/**
 * Latency: a paced producer process publishes at 1,000 and 10,000 msg/s (payloads carry their
 * publish time); one member process (batch 100) and one raw-loop process (COUNT 100) record
 * publish → handler start. Runs alternate ours/raw; each has a 0.5 s warm-up that is not recorded.
 * With `--node=`, each release has its own member, raw-loop and producer processes, and the runs
 * of every release rotate in one order.
 */
export async function runLatencyBench(
  ctx: BenchContext,
  rawClient: RawClientName = 'ioredis6',
): Promise<LatencyResult> {
  const coordinator = await BenchCoordinator.start(ctx, 'lat');
  const children: BenchChild[] = [];
  try {
    const common = {
      COORDINATOR_URL: coordinator.url,
      COORDINATOR_TOKEN: coordinator.token,
      REDIS_URL: ctx.redisUrl,
    };
    const slots: LatencySlot[] = [];
    for (const node of ctx.nodes ? [...ctx.nodes] : [undefined]) {
      const suffix = node ? `-n${node.major}` : '';
      const on = node ? { execPath: node.execPath } : {};
      const oursStream = await coordinator.createStream(`lat-ours${suffix}`, SHARDS);
      const rawStream = await coordinator.createStream(`lat-raw${suffix}`, SHARDS);
      const [member, raw, producer] = await Promise.all([
        BenchChild.start({
          worker: 'member-app',
          name: `lat-member${suffix}`,
          ...on,
          env: {
            ...common,
            GROUP: `lat${suffix}`,
            BENCH_STREAM: oursStream.stream,
            ...ctx.profileEnv(`latency-member${suffix}`),
          },
        }),
        BenchChild.start({
          worker: 'raw-consumer',
          name: `lat-raw${suffix}`,
          ...on,
          env: {
            ...common,
            GROUP: `lat${suffix}`,
            SHARD_KEYS: rawStream.keys.join(','),
            RAW_CLIENT: rawClient,
          },
        }),
        BenchChild.start({
          worker: 'rate-producer',
          name: `lat-producer${suffix}`,
          ...on,
          env: common,
        }),
      ]);
      children.push(member, raw, producer);
      await waitForValue(
        async () => {
          const s = await member.request({ type: 'status' }, 'status');
          return (s.held as number[]).length === SHARDS ? true : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100, message: 'the latency member to hold every shard' },
      );
      slots.push({ node, member, raw, producer, oursStream, rawStream });
    }
    const cases: LatencyCase[] = [];
    for (const rate of ctx.profile.latencyRates) {
      const runsOf = slots.map(() => ({ ours: [] as LatencyRun[], raw: [] as LatencyRun[] }));
      type Side = [LatencySlot, BenchChild, StreamInfo, LatencyRun[]];
      // ours on each release, then raw on each (without --node=: ours, raw)
      const sides: Side[] = interleaveBySlot(
        slots.map((slot, i): Side[] => [
          [slot, slot.member, slot.oursStream, runsOf[i]?.ours as LatencyRun[]],
          [slot, slot.raw, slot.rawStream, runsOf[i]?.raw as LatencyRun[]],
        ]),
      );
      for (let rep = 0; rep < ctx.profile.reps; rep++) {
        // a rotating order: without --node= ours first on even repetitions, raw first on odd ones
        const order = sides.map((_, i) => sides[(i + rep) % sides.length] as Side);
        for (const [slot, consumer, stream, runs] of order) {
          await slot.producer.request(
            { type: 'produce', stream: stream.stream, rate, durationMs: 500 },
            'produced',
            60_000,
          );
          await consumer.request({ type: 'latency-reset' }, 'latency-reset');
          const produced = await slot.producer.request(
            {
              type: 'produce',
              stream: stream.stream,
              rate,
              durationMs: ctx.profile.latencySeconds * 1000,
            },
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
          for (const key of stream.keys) await ctx.redis.xtrim(key, 'MAXLEN', '~', 1000);
        }
        for (const [i, slot] of slots.entries()) {
          const { ours, raw: rawRuns } = runsOf[i] as { ours: LatencyRun[]; raw: LatencyRun[] };
          ctx.log(
            `latency ${slot.node ? `node${slot.node.major} ` : ''}${rate}/s rep ${rep + 1}: ours p50 ${ours.at(-1)?.p50.toFixed(2)} p99 ${ours.at(-1)?.p99.toFixed(2)} ms; raw p50 ${rawRuns.at(-1)?.p50.toFixed(2)} p99 ${rawRuns.at(-1)?.p99.toFixed(2)} ms`,
          );
        }
      }
      for (const [i, slot] of slots.entries()) {
        const { ours, raw: rawRuns } = runsOf[i] as { ours: LatencyRun[]; raw: LatencyRun[] };
        const oursP99 = median(ours.map((r) => r.p99));
        const rawP99 = median(rawRuns.map((r) => r.p99));
        cases.push({
          rate,
          ...(slot.node ? { node: { major: slot.node.major, version: slot.node.version } } : {}),
          ours,
          raw: rawRuns,
          oursP50: median(ours.map((r) => r.p50)),
          oursP99,
          rawP50: median(rawRuns.map((r) => r.p50)),
          rawP99,
          p99Ratio: ratio(oursP99, rawP99),
        });
      }
    }
    return {
      shards: SHARDS,
      seconds: ctx.profile.latencySeconds,
      cases,
      rawClient,
      ...(ctx.nodes
        ? { nodes: ctx.nodes.map((n) => ({ major: n.major, version: n.version })) }
        : {}),
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await coordinator.stop();
  }
}
