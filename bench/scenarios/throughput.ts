import { BenchChild, type BenchMessage } from '../support/bench-child.js';
import type { BenchProfile } from '../support/bench-profile.js';
import { BenchCoordinator, type BenchContext, type StreamInfo } from '../support/bench-context.js';
import { meterRedis, type RedisDelta } from '../support/redis-meter.js';
import { median, preciseNow, ratio, sleep } from '../support/stats.js';
import { benchPayload } from '../workers/payload.js';
import { waitForValue } from '../../test/support/wait.js';

/** One drain: `messages` prefilled, handled from `go` to the last handler call. */
export interface DrainRun {
  readonly messages: number;
  readonly ms: number;
  readonly perSecond: number;
  readonly redis: RedisDelta;
  /** CPU time the consumer processes used per message (µs, all processes summed). */
  readonly consumerCpuUsPerMessage: number;
  /** Largest RSS of a consumer process seen during the drain (KiB). */
  readonly peakRssKb: number;
}

/** Ours vs the raw loop for one layout and batch size. */
export interface ThroughputCase {
  readonly processes: number;
  readonly batchSize: number;
  readonly ours: readonly DrainRun[];
  readonly raw: readonly DrainRun[];
  readonly oursMedian: number;
  readonly rawMedian: number;
  /** Median of the per-repetition ratios ours/raw (each pair ran back to back). */
  readonly ratio: number;
  /** RSS of one member process after joining, before any load (KiB). */
  readonly memberIdleRssKb: number;
}

/** A peer's runs on the same message count. */
export interface PeerResult {
  readonly name: string;
  readonly settings: string;
  readonly runs: readonly DrainRun[];
  readonly median: number;
}

/** The data-plane throughput scenario's results. */
export interface ThroughputResult {
  readonly shards: number;
  readonly cases: readonly ThroughputCase[];
  readonly peers: readonly PeerResult[];
}

const SHARDS = 8;
const GROUP = 'bench';

/** A set of consumer processes that drain a stream on `go` (ours or raw). */
class ConsumerSet {
  constructor(
    readonly children: readonly BenchChild[],
    readonly stream: StreamInfo,
  ) {}

  async statuses(): Promise<BenchMessage[]> {
    return Promise.all(this.children.map((c) => c.request({ type: 'status' }, 'status', 10_000)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c.stop('SIGTERM', 20_000)));
  }
}

/**
 * Data-plane throughput: 8 shards, 1 and 4 consumer processes, batch sizes 1/10/100, our library
 * (member processes with a no-op handler) against a raw XREADGROUP/XACK loop per shard in the
 * same process layout, each pair of runs back to back; then @moleculer/channels and BullMQ on the
 * same message count.
 */
export async function runThroughputBench(ctx: BenchContext): Promise<ThroughputResult> {
  const coordinator = await BenchCoordinator.start(ctx, 'tp');
  const cases: ThroughputCase[] = [];
  try {
    for (const batchSize of ctx.profile.batchSizes) {
      for (const processes of ctx.profile.processCounts) {
        cases.push(await runCase(ctx, coordinator, processes, batchSize));
      }
    }
  } finally {
    await coordinator.stop();
  }
  // BENCH_SKIP_PEERS=1: our library and the raw loop only (quick experiments)
  const peers =
    process.env.BENCH_SKIP_PEERS === '1'
      ? []
      : [await runPeer(ctx, 'moleculer'), await runPeer(ctx, 'bullmq')];
  return { shards: SHARDS, cases, peers };
}

async function runCase(
  ctx: BenchContext,
  coordinator: BenchCoordinator,
  processes: number,
  batchSize: number,
): Promise<ThroughputCase> {
  const label = `p${processes}-b${batchSize}`;
  ctx.log(`throughput ${label}: starting ${processes} member and ${processes} raw processes`);
  const oursStream = await coordinator.createStream(`ours-${label}`, SHARDS);
  const rawStream = await coordinator.createStream(`raw-${label}`, SHARDS);
  const group = `${GROUP}-${label}`;
  const members = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      BenchChild.start({
        worker: 'member-app',
        name: `member-${label}-${i}`,
        env: {
          ...(i === 0 ? ctx.profileEnv(`member-${label}`) : {}),
          COORDINATOR_URL: coordinator.url,
          COORDINATOR_TOKEN: coordinator.token,
          REDIS_URL: ctx.redisUrl,
          GROUP: group,
          BENCH_STREAM: oursStream.stream,
          BATCH_SIZE: String(batchSize),
        },
      }),
    ),
  );
  const raws = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      BenchChild.start({
        worker: 'raw-consumer',
        name: `raw-${label}-${i}`,
        env: {
          ...(i === 0 ? ctx.profileEnv(`raw-${label}`) : {}),
          REDIS_URL: ctx.redisUrl,
          GROUP: group,
          SHARD_KEYS: rawStream.keys.filter((_, k) => k % processes === i).join(','),
          BATCH_SIZE: String(batchSize),
        },
      }),
    ),
  );
  const ours = new ConsumerSet(members, oursStream);
  const raw = new ConsumerSet(raws, rawStream);
  try {
    // every member holds its share and the group is stable
    await waitForValue(
      async () => {
        const described = await coordinator.describe(group);
        if (described?.state !== 'STABLE' || described.members.length !== processes)
          return undefined;
        const held = (await ours.statuses()).map((s) => (s.held as number[]).length);
        return held.every((n) => n === SHARDS / processes) ? true : undefined;
      },
      {
        timeoutMs: 60_000,
        intervalMs: 100,
        message: `group ${group} to settle on ${processes} members`,
      },
    );
    const idle = await ours.statuses();
    const memberIdleRssKb = median(idle.map((s) => s.rssKb as number));
    const oursRuns: DrainRun[] = [];
    const rawRuns: DrainRun[] = [];
    // unmeasured drains first, until every process has read `warmupBatchesPerProcess` batches:
    // V8 optimises a function once it has run enough, and the per-batch ones (the read turn,
    // the ack, the command builders) run once per 100 messages at batch 100 — with four
    // processes each sees a quarter of a drain, so a fixed number of warm-up drains would leave
    // them colder than one process (and ours, with more such functions, colder than the raw loop)
    const warmups = warmupDrains(ctx.profile, processes, batchSize);
    for (let w = 0; w < warmups; w++) {
      await drain(ctx, coordinator, ours);
      await drain(ctx, coordinator, raw);
    }
    ctx.log(`throughput ${label}: ${warmups} warm-up drains per side done (not measured)`);
    for (let rep = 0; rep < ctx.profile.throughputReps; rep++) {
      const order: Array<[ConsumerSet, DrainRun[]]> =
        rep % 2 === 0
          ? [
              [ours, oursRuns],
              [raw, rawRuns],
            ]
          : [
              [raw, rawRuns],
              [ours, oursRuns],
            ];
      for (const [set, runs] of order) runs.push(await drain(ctx, coordinator, set));
      ctx.log(
        `throughput ${label} rep ${rep + 1}: ours ${Math.round(oursRuns.at(-1)?.perSecond ?? 0)} msg/s (${oursRuns.at(-1)?.consumerCpuUsPerMessage.toFixed(1)} µs CPU/msg), raw ${Math.round(rawRuns.at(-1)?.perSecond ?? 0)} msg/s (${rawRuns.at(-1)?.consumerCpuUsPerMessage.toFixed(1)} µs CPU/msg)`,
      );
    }
    const ratios = oursRuns.map((o, i) => ratio(o.perSecond, rawRuns[i]?.perSecond ?? Number.NaN));
    return {
      processes,
      batchSize,
      ours: oursRuns,
      raw: rawRuns,
      oursMedian: median(oursRuns.map((r) => r.perSecond)),
      rawMedian: median(rawRuns.map((r) => r.perSecond)),
      ratio: median(ratios),
      memberIdleRssKb,
    };
  } finally {
    await Promise.all([ours.stop(), raw.stop()]);
  }
}

/**
 * How many unmeasured drains per side let every one of `processes` processes read the profile's
 * warm-up batches of `batchSize` (at least one drain).
 */
function warmupDrains(profile: BenchProfile, processes: number, batchSize: number): number {
  const messages = profile.warmupBatchesPerProcess * batchSize * processes;
  return Math.max(1, Math.ceil(messages / profile.messages));
}

/** Arm (close the gates), prefill, wait until every shard's loop waits at the gate, go, drain. */
async function drain(
  ctx: BenchContext,
  coordinator: BenchCoordinator,
  set: ConsumerSet,
): Promise<DrainRun> {
  const messages = ctx.profile.messages;
  await Promise.all(set.children.map((c) => c.request({ type: 'arm' }, 'armed')));
  await prefill(coordinator, set.stream.stream, messages);
  await waitForValue(
    async () =>
      (await set.statuses()).reduce((n, s) => n + (s.waiting as number), 0) >= SHARDS
        ? true
        : undefined,
    {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: `every shard loop of ${set.stream.stream} to wait at its gate`,
    },
  );
  let peakRssKb = 0;
  const cpuBefore = (await set.statuses()).reduce((n, s) => n + (s.cpuUs as number), 0);
  let cpuAfter = 0;
  const { result, redis } = await meterRedis(ctx.redis, async () => {
    const goAt = preciseNow();
    for (const c of set.children) c.send({ type: 'go' });
    const statuses = await waitForValue(
      async () => {
        const s = await set.statuses();
        for (const x of s) peakRssKb = Math.max(peakRssKb, x.rssKb as number);
        return s.reduce((n, x) => n + (x.handled as number), 0) >= messages ? s : undefined;
      },
      {
        timeoutMs: 600_000,
        intervalMs: 10,
        message: `${messages} messages of ${set.stream.stream} to be handled`,
      },
    );
    const lastAt = Math.max(...statuses.map((s) => s.lastAt as number));
    cpuAfter = statuses.reduce((n, s) => n + (s.cpuUs as number), 0);
    // the acks of the last batches
    await waitForValue(
      () => pendingTotal(ctx, set.stream).then((n) => (n === 0 ? true : undefined)),
      { timeoutMs: 10_000, intervalMs: 5, message: `the last acks of ${set.stream.stream}` },
    );
    return lastAt - goAt;
  });
  for (const key of set.stream.keys) await ctx.redis.xtrim(key, 'MAXLEN', 0);
  await sleep(50);
  return {
    messages,
    ms: result,
    perSecond: (messages / result) * 1000,
    redis,
    consumerCpuUsPerMessage: (cpuAfter - cpuBefore) / messages,
    peakRssKb,
  };
}

async function pendingTotal(ctx: BenchContext, stream: StreamInfo): Promise<number> {
  let total = 0;
  for (const key of stream.keys) {
    const groups = (await ctx.redis.xinfo('GROUPS', key)) as unknown[][];
    for (const g of groups) {
      const at = g.indexOf('pending');
      total += Number(g[at + 1] ?? 0);
    }
  }
  return total;
}

/** Writes `count` ~100-byte messages over many keys with the library's publisher. */
export async function prefill(
  coordinator: BenchCoordinator,
  stream: string,
  count: number,
): Promise<void> {
  const publisher = coordinator.publisher();
  for (let i = 0; i < count; i += 5000) {
    const batch = [];
    for (let j = i; j < Math.min(count, i + 5000); j++)
      batch.push({ key: `k-${j % 4096}`, payload: benchPayload(j) });
    await publisher.publishBatch(stream, batch);
  }
}

async function runPeer(ctx: BenchContext, name: 'moleculer' | 'bullmq'): Promise<PeerResult> {
  const id = `bench-${name}-${Date.now().toString(36)}`;
  const settings =
    name === 'moleculer'
      ? 'Redis adapter, maxInFlight 100, one consumer'
      : 'Worker concurrency 8, removeOnComplete';
  const child = await BenchChild.start({
    worker: name === 'moleculer' ? 'moleculer-consumer' : 'bullmq-worker',
    name,
    env: {
      REDIS_URL: ctx.redisUrl,
      CHANNEL: id,
      QUEUE: id,
      MAX_IN_FLIGHT: '100',
      CONCURRENCY: '8',
    },
  });
  const runs: DrainRun[] = [];
  const messages = ctx.profile.peerMessages;
  try {
    for (let rep = 0; rep < ctx.profile.reps; rep++) {
      await child.request({ type: 'prefill', count: messages }, 'prefilled', 600_000);
      const { result, redis } = await meterRedis(ctx.redis, () =>
        child.request({ type: 'run', count: messages }, 'done', 900_000),
      );
      const ms = (result.lastAt as number) - (result.firstAt as number);
      runs.push({
        messages,
        ms,
        perSecond: (messages / ms) * 1000,
        redis,
        consumerCpuUsPerMessage: (result.cpuUs as number) / messages,
        peakRssKb: result.rssKb as number,
      });
      ctx.log(
        `throughput ${name} rep ${rep + 1}: ${Math.round(runs.at(-1)?.perSecond ?? 0)} msg/s`,
      );
      if (name === 'moleculer') await ctx.redis.del(id);
    }
  } finally {
    await child.stop();
    let cursor = '0';
    do {
      const [next, keys] = await ctx.redis.scan(cursor, 'MATCH', `*${id}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await ctx.redis.unlink(...keys);
    } while (cursor !== '0');
  }
  return { name, settings, runs, median: median(runs.map((r) => r.perSecond)) };
}
