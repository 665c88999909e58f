import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BenchChild, type BenchMessage } from '../support/bench-child.js';
import { type BenchNode, interleaveBySlot } from '../support/bench-nodes.js';
import type { BenchProfile } from '../support/bench-profile.js';
import { BenchCoordinator, type BenchContext, type StreamInfo } from '../support/bench-context.js';
import { meterRedis, type RedisDelta } from '../support/redis-meter.js';
import { median, preciseNow, ratio, sleep } from '../support/stats.js';
import { benchPayload } from '../workers/payload.js';
import { waitForValue } from '../../test/support/wait.js';
import { RAW_CLIENTS, type RawClientName } from '../workers/raw-clients.js';

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
  /** Entries whose sequence number was not above the previous one of their shard (must be 0). */
  readonly outOfOrder?: number;
}

/** One raw-loop client's runs in a case, and ours against it. */
export interface BaselineRuns {
  readonly client: RawClientName;
  readonly runs: readonly DrainRun[];
  readonly median: number;
  /** Median of the per-repetition ratios ours / this client (each repetition ran back to back). */
  readonly ratio: number;
}

/**
 * Ours vs the raw loops for one regime, layout and batch size. `raw`, `rawMedian` and `ratio` are
 * those of the fastest raw loop (the highest median), named in `fastest`.
 */
export interface ThroughputCase {
  /** `warm`: after the profile's warm-up drains; `cold`: fresh processes, the first drain. */
  readonly regime?: 'warm' | 'cold';
  /** `--node=`: the Node release both sides' consumer processes ran on (absent: the runner's). */
  readonly node?: NodeLabel;
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
  readonly fastest?: RawClientName;
  readonly baselines?: readonly BaselineRuns[];
  /** Other member sides (levers measured in the same run), each against the fastest raw loop. */
  readonly variants?: ReadonlyArray<{
    readonly name: string;
    readonly runs: readonly DrainRun[];
    readonly median: number;
    readonly ratio: number;
  }>;
}

/** Which Node a case or run was measured on (`--node=`). */
export interface NodeLabel {
  readonly major: number;
  readonly version: string;
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
  /** The raw-loop clients measured (each case has one baseline per client). */
  readonly rawClients?: readonly RawClientName[];
  /** `--node=`: the releases measured, in the order given (each layout has one case per release). */
  readonly nodes?: readonly NodeLabel[];
}

/** One Node release of a run (`undefined`: the runner's own, no `--node=`). */
type NodeSlot = BenchNode | undefined;

/** The name suffix of a slot's streams and groups (none without `--node=`). */
const slotSuffix = (node: NodeSlot): string => (node ? `-n${node.major}` : '');
const slotLabel = (node: NodeSlot): { node?: NodeLabel } =>
  node ? { node: { major: node.major, version: node.version } } : {};
const slotName = (node: NodeSlot, name: string): string =>
  node ? `node${node.major} ${name}` : name;

const SHARDS = 8;
const GROUP = 'bench';
const WORKERS = join(dirname(fileURLToPath(import.meta.url)), '..', 'workers');
/**
 * How long a consumer process may take to start: a layout starts all its processes at once (two
 * releases double them), and on the shared machine (load average 40–60) a raw loop has taken
 * more than 30 s.
 */
const WORKER_READY_MS = 90_000;
/**
 * `BENCH_OURS_IOREDIS5=1`: a second member side whose library resolves `ioredis` to ioredis 5, so
 * its non-reader connections (heartbeats go over HTTP; the subscriber, the producer) run on it too.
 * Its readers run on ioredis 5 in either side (`READER_CLIENT`).
 */
const OURS_IOREDIS5 = process.env.BENCH_OURS_IOREDIS5 === '1';
/**
 * `BENCH_OURS_COPY=<dir>`: a second member side on a copy of an earlier build of the library
 * (`bench/workers/library-copy-preload.ts`), cold cases only: before/after a change, interleaved.
 */
const OURS_COPY = process.env.BENCH_OURS_COPY;
/** `BENCH_PROFILE_COLD=1` (with `--cpu-prof`): profile the first member of each cold side. */
const PROFILE_COLD = process.env.BENCH_PROFILE_COLD === '1';

/** A member side other than the plain one: its library on ioredis 5, or an earlier build. */
type OursVariant = 'ioredis5' | 'copy';

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

/** The raw-loop clients to measure: `BENCH_RAW_CLIENTS` (comma-separated) or all of them. */
function rawClients(): RawClientName[] {
  const raw = process.env.BENCH_RAW_CLIENTS;
  if (!raw) return [...RAW_CLIENTS];
  const names = raw.split(',') as RawClientName[];
  for (const n of names) {
    if (!RAW_CLIENTS.includes(n))
      throw new Error(`BENCH_RAW_CLIENTS: unknown client ${n}; use ${RAW_CLIENTS.join(',')}`);
  }
  return names;
}

/**
 * Data-plane throughput: 8 shards, 1 and 4 consumer processes, batch sizes 1/10/100, our library
 * (member processes whose handler decodes the payload and checks per-shard order) against a raw
 * XREADGROUP/XACK loop per shard doing the same, on each raw client, in the same process layout;
 * two regimes: warm (after unmeasured warm-up drains, repetitions back to back) and cold (fresh
 * processes, the first `coldMessages`); then @moleculer/channels and BullMQ.
 */
export async function runThroughputBench(ctx: BenchContext): Promise<ThroughputResult> {
  const coordinator = await BenchCoordinator.start(ctx, 'tp');
  const clients = rawClients();
  const cases: ThroughputCase[] = [];
  try {
    for (const batchSize of ctx.profile.batchSizes) {
      for (const processes of ctx.profile.processCounts) {
        if (process.env.BENCH_SKIP_COLD !== '1')
          cases.push(...(await runColdCase(ctx, coordinator, clients, processes, batchSize)));
        if (process.env.BENCH_SKIP_WARM !== '1')
          cases.push(...(await runCase(ctx, coordinator, clients, processes, batchSize)));
      }
    }
  } finally {
    await coordinator.stop();
  }
  // BENCH_SKIP_PEERS=1: our library and the raw loops only (quick experiments)
  const peers =
    process.env.BENCH_SKIP_PEERS === '1'
      ? []
      : [await runPeer(ctx, 'moleculer'), await runPeer(ctx, 'bullmq')];
  return {
    shards: SHARDS,
    cases,
    peers,
    rawClients: clients,
    ...(ctx.nodes ? { nodes: ctx.nodes.map((n) => ({ major: n.major, version: n.version })) } : {}),
  };
}

/** `processes` member processes of `group` on `stream`, joined and holding their shares. */
async function startOurs(
  ctx: BenchContext,
  coordinator: BenchCoordinator,
  stream: StreamInfo,
  group: string,
  processes: number,
  batchSize: number,
  profileLabel?: string,
  variant?: OursVariant,
  node?: NodeSlot,
): Promise<ConsumerSet> {
  const preload =
    variant === undefined
      ? ''
      : `--import=${pathToFileURL(join(WORKERS, variant === 'copy' ? 'library-copy-preload.js' : 'ioredis5-preload.js')).href}`;
  const members = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      BenchChild.start(
        {
          worker: 'member-app',
          name: `member-${group}-${i}`,
          ...(node ? { execPath: node.execPath } : {}),
          env: {
            ...(i === 0 && profileLabel ? ctx.profileEnv(profileLabel) : {}),
            ...(preload
              ? {
                  NODE_OPTIONS:
                    `${i === 0 && profileLabel ? (ctx.profileEnv(profileLabel).NODE_OPTIONS ?? '') : ''} ${preload}`.trim(),
                }
              : {}),
            ...(variant === 'copy' && OURS_COPY ? { BENCH_LIB_COPY: OURS_COPY } : {}),
            COORDINATOR_URL: coordinator.url,
            COORDINATOR_TOKEN: coordinator.token,
            REDIS_URL: ctx.redisUrl,
            GROUP: group,
            BENCH_STREAM: stream.stream,
            BATCH_SIZE: String(batchSize),
          },
        },
        WORKER_READY_MS,
      ),
    ),
  );
  const ours = new ConsumerSet(members, stream);
  // every member holds its share and the group is stable
  await waitForValue(
    async () => {
      const described = await coordinator.describe(group);
      if (described?.state !== 'STABLE' || described.members.length !== processes) return undefined;
      const held = (await ours.statuses()).map((s) => (s.held as number[]).length);
      return held.every((n) => n === SHARDS / processes) ? true : undefined;
    },
    {
      timeoutMs: 60_000,
      intervalMs: 100,
      message: `group ${group} to settle on ${processes} members`,
    },
  );
  return ours;
}

/** `processes` raw-loop processes of `client` sharing `stream`'s shard keys. */
async function startRaw(
  ctx: BenchContext,
  client: RawClientName,
  stream: StreamInfo,
  group: string,
  processes: number,
  batchSize: number,
  profileLabel?: string,
  node?: NodeSlot,
): Promise<ConsumerSet> {
  const raws = await Promise.all(
    Array.from({ length: processes }, (_, i) =>
      BenchChild.start(
        {
          worker: 'raw-consumer',
          name: `raw-${client}-${group}-${i}`,
          ...(node ? { execPath: node.execPath } : {}),
          env: {
            ...(i === 0 && profileLabel ? ctx.profileEnv(profileLabel) : {}),
            REDIS_URL: ctx.redisUrl,
            GROUP: group,
            RAW_CLIENT: client,
            SHARD_KEYS: stream.keys.filter((_, k) => k % processes === i).join(','),
            BATCH_SIZE: String(batchSize),
          },
        },
        WORKER_READY_MS,
      ),
    ),
  );
  return new ConsumerSet(raws, stream);
}

/** Medians, per-repetition ratios against each client, and the fastest client. */
function summarizeCase(
  regime: 'warm' | 'cold',
  processes: number,
  batchSize: number,
  oursRuns: DrainRun[],
  rawRuns: Map<RawClientName, DrainRun[]>,
  memberIdleRssKb: number,
  variantRuns: ReadonlyMap<string, DrainRun[]> = new Map(),
  node?: NodeSlot,
): ThroughputCase {
  const baselines: BaselineRuns[] = [...rawRuns].map(([client, runs]) => ({
    client,
    runs,
    median: median(runs.map((r) => r.perSecond)),
    ratio: median(oursRuns.map((o, i) => ratio(o.perSecond, runs[i]?.perSecond ?? Number.NaN))),
  }));
  const fastest = baselines.reduce((best, b) => (b.median > best.median ? b : best));
  return {
    regime,
    ...slotLabel(node),
    processes,
    batchSize,
    ours: oursRuns,
    raw: fastest.runs,
    oursMedian: median(oursRuns.map((r) => r.perSecond)),
    rawMedian: fastest.median,
    ratio: fastest.ratio,
    memberIdleRssKb,
    fastest: fastest.client,
    baselines,
    ...(variantRuns.size > 0
      ? {
          variants: [...variantRuns].map(([name, runs]) => ({
            name,
            runs,
            median: median(runs.map((r) => r.perSecond)),
            ratio: median(
              runs.map((v, i) => ratio(v.perSecond, fastest.runs[i]?.perSecond ?? Number.NaN)),
            ),
          })),
        }
      : {}),
  };
}

function runLine(run: DrainRun | undefined): string {
  return `${Math.round(run?.perSecond ?? 0)} msg/s (${run?.consumerCpuUsPerMessage.toFixed(2)} µs CPU/msg)`;
}

/** The sides of one Node slot in a warm case, and their runs. */
interface SlotRuns {
  readonly node: NodeSlot;
  readonly ours: DrainRun[];
  readonly raw: Map<RawClientName, DrainRun[]>;
  readonly variants: Map<string, DrainRun[]>;
  memberIdleRssKb: number;
}

/** Every run list of a slot (ours, the variants, each raw client). */
function runsOfSlot(slot: SlotRuns): DrainRun[][] {
  return [slot.ours, ...slot.variants.values(), ...slot.raw.values()];
}

/**
 * Warm: per Node slot (one without `--node=`), ours, the ours-on-ioredis-5 variant and each raw
 * loop; the warm-up and the measured repetitions rotate over every side of every slot, so load
 * drift hits each release alike. One case per slot.
 */
async function runCase(
  ctx: BenchContext,
  coordinator: BenchCoordinator,
  clients: readonly RawClientName[],
  processes: number,
  batchSize: number,
): Promise<ThroughputCase[]> {
  const label = `p${processes}-b${batchSize}`;
  const nodes: NodeSlot[] = ctx.nodes ? [...ctx.nodes] : [undefined];
  ctx.log(
    `throughput warm ${label}: starting ${processes} member and raw processes per client${ctx.nodes ? ` on Node ${ctx.nodes.map((n) => n.version).join(' and ')}` : ''}`,
  );
  const sets: Array<[string, ConsumerSet, DrainRun[]]> = [];
  const slots: SlotRuns[] = [];
  try {
    for (const node of nodes) {
      const suffix = slotSuffix(node);
      const group = `${GROUP}-${label}${suffix}`;
      const slot: SlotRuns = {
        node,
        ours: [],
        raw: new Map(),
        variants: new Map(),
        memberIdleRssKb: Number.NaN,
      };
      slots.push(slot);
      const oursStream = await coordinator.createStream(`ours-${label}${suffix}`, SHARDS);
      const ours = await startOurs(
        ctx,
        coordinator,
        oursStream,
        group,
        processes,
        batchSize,
        `member-${label}${suffix}`,
        undefined,
        node,
      );
      sets.push([slotName(node, 'ours'), ours, slot.ours]);
      if (OURS_IOREDIS5) {
        const stream = await coordinator.createStream(`ours5-${label}${suffix}`, SHARDS);
        const runs: DrainRun[] = [];
        slot.variants.set('ours on ioredis 5', runs);
        sets.push([
          slotName(node, 'ours-ioredis5'),
          await startOurs(
            ctx,
            coordinator,
            stream,
            `${group}-5`,
            processes,
            batchSize,
            undefined,
            'ioredis5',
            node,
          ),
          runs,
        ]);
      }
      for (const client of clients) {
        const stream = await coordinator.createStream(`raw-${client}-${label}${suffix}`, SHARDS);
        const runs: DrainRun[] = [];
        slot.raw.set(client, runs);
        sets.push([
          slotName(node, client),
          await startRaw(
            ctx,
            client,
            stream,
            group,
            processes,
            batchSize,
            `raw-${client}-${label}${suffix}`,
            node,
          ),
          runs,
        ]);
      }
      const idle = await ours.statuses();
      slot.memberIdleRssKb = median(idle.map((s) => s.rssKb as number));
    }
    // the releases' sides alternate (ours on 20, ours on 24, ioredis5 on 20, …)
    const bySlot = slots.map((slot) =>
      sets.filter(([, , runs]) => runsOfSlot(slot).includes(runs)),
    );
    sets.splice(0, sets.length, ...interleaveBySlot(bySlot));
    // unmeasured drains first, until every process has read `warmupBatchesPerProcess` batches:
    // V8 optimises a function once it has run enough, and the per-batch ones (the read turn,
    // the ack, the command builders) run once per 100 messages at batch 100 — with four
    // processes each sees a quarter of a drain, so a fixed number of warm-up drains would leave
    // them colder than one process (and ours, with more such functions, colder than the raw loop)
    const warmups = warmupDrains(ctx.profile, processes, batchSize);
    for (let w = 0; w < warmups; w++) {
      for (const [, set] of sets) await drain(ctx, coordinator, set, ctx.profile.messages);
    }
    ctx.log(`throughput warm ${label}: ${warmups} warm-up drains per side done (not measured)`);
    for (let rep = 0; rep < ctx.profile.throughputReps; rep++) {
      // the sides in a rotating order, so none always runs first or after the same one
      const order = sets.map((_, i) => sets[(i + rep) % sets.length] as (typeof sets)[number]);
      for (const [, set, runs] of order)
        runs.push(await drain(ctx, coordinator, set, ctx.profile.messages));
      ctx.log(
        `throughput warm ${label} rep ${rep + 1}: ${sets.map(([name, , runs]) => `${name} ${runLine(runs.at(-1))}`).join(', ')}`,
      );
    }
    return slots.map((slot) =>
      summarizeCase(
        'warm',
        processes,
        batchSize,
        slot.ours,
        slot.raw,
        slot.memberIdleRssKb,
        slot.variants,
        slot.node,
      ),
    );
  } finally {
    await Promise.all(sets.map(([, set]) => set.stop()));
  }
}

/**
 * Cold: for each repetition, fresh processes per side (a new group), then one drain of
 * `coldMessages` right after they hold their shards — what a user sees in the first seconds.
 * With `--node=`, the sides of every release run in one rotating order; one case per release.
 */
async function runColdCase(
  ctx: BenchContext,
  coordinator: BenchCoordinator,
  clients: readonly RawClientName[],
  processes: number,
  batchSize: number,
): Promise<ThroughputCase[]> {
  const label = `p${processes}-b${batchSize}`;
  const messages = ctx.profile.coldMessages;
  const nodes: NodeSlot[] = ctx.nodes ? [...ctx.nodes] : [undefined];
  type Side = [string, (rep: number) => Promise<ConsumerSet>, DrainRun[], number];
  const sides: Side[] = [];
  const slots: Array<SlotRuns & { idleRss: number[] }> = [];
  for (const node of nodes) {
    const suffix = slotSuffix(node);
    const at = slots.length;
    const slot = {
      node,
      ours: [] as DrainRun[],
      raw: new Map<RawClientName, DrainRun[]>(clients.map((c) => [c, []])),
      variants: new Map<string, DrainRun[]>([
        ...(OURS_IOREDIS5 ? [['ours on ioredis 5', []] as [string, DrainRun[]]] : []),
        ...(OURS_COPY ? [['ours, earlier build', []] as [string, DrainRun[]]] : []),
      ]),
      memberIdleRssKb: Number.NaN,
      idleRss: [] as number[],
    };
    slots.push(slot);
    const group = (rep: number): string => `${GROUP}-cold-${label}-${rep}${suffix}`;
    const oursStream = await coordinator.createStream(`cold-ours-${label}${suffix}`, SHARDS);
    sides.push([
      slotName(node, 'ours'),
      (rep) =>
        startOurs(
          ctx,
          coordinator,
          oursStream,
          group(rep),
          processes,
          batchSize,
          PROFILE_COLD && rep === 0 ? `cold-ours-${label}${suffix}` : undefined,
          undefined,
          node,
        ),
      slot.ours,
      at,
    ]);
    if (OURS_COPY) {
      const copyStream = await coordinator.createStream(`cold-ours-copy-${label}${suffix}`, SHARDS);
      sides.push([
        slotName(node, 'ours-earlier-build'),
        (rep) =>
          startOurs(
            ctx,
            coordinator,
            copyStream,
            `${group(rep)}-copy`,
            processes,
            batchSize,
            PROFILE_COLD && rep === 0 ? `cold-ours-copy-${label}${suffix}` : undefined,
            'copy',
            node,
          ),
        slot.variants.get('ours, earlier build') as DrainRun[],
        at,
      ]);
    }
    if (OURS_IOREDIS5) {
      const ours5Stream = await coordinator.createStream(`cold-ours5-${label}${suffix}`, SHARDS);
      sides.push([
        slotName(node, 'ours-ioredis5'),
        (rep) =>
          startOurs(
            ctx,
            coordinator,
            ours5Stream,
            `${group(rep)}-5`,
            processes,
            batchSize,
            PROFILE_COLD && rep === 0 ? `cold-ours5-${label}${suffix}` : undefined,
            'ioredis5',
            node,
          ),
        slot.variants.get('ours on ioredis 5') as DrainRun[],
        at,
      ]);
    }
    for (const client of clients) {
      const stream = await coordinator.createStream(`cold-raw-${client}-${label}${suffix}`, SHARDS);
      sides.push([
        slotName(node, client),
        (rep) =>
          startRaw(
            ctx,
            client,
            stream,
            group(rep),
            processes,
            batchSize,
            PROFILE_COLD && rep === 0 ? `cold-raw-${client}-${label}${suffix}` : undefined,
            node,
          ),
        slot.raw.get(client) as DrainRun[],
        at,
      ]);
    }
  }
  // the releases' sides alternate (ours on 20, ours on 24, ioredis5 on 20, …)
  const alternating = interleaveBySlot(slots.map((_, at) => sides.filter((s) => s[3] === at)));
  for (let rep = 0; rep < ctx.profile.coldReps; rep++) {
    const order = alternating.map((_, i) => alternating[(i + rep) % alternating.length] as Side);
    for (const [, start, runs, at] of order) {
      const set = await start(rep);
      try {
        if (runs === slots[at]?.ours) {
          const idle = await set.statuses();
          slots[at]?.idleRss.push(median(idle.map((s) => s.rssKb as number)));
        }
        runs.push(await drain(ctx, coordinator, set, messages));
      } finally {
        await set.stop();
      }
    }
    ctx.log(
      `throughput cold ${label} rep ${rep + 1}: ${order.map(([name, , runs]) => `${name} ${runLine(runs.at(-1))}`).join(', ')}`,
    );
  }
  return slots.map((slot) =>
    summarizeCase(
      'cold',
      processes,
      batchSize,
      slot.ours,
      slot.raw,
      median(slot.idleRss),
      slot.variants,
      slot.node,
    ),
  );
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
  messages: number,
): Promise<DrainRun> {
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
  const before = await set.statuses();
  const cpuBefore = before.reduce((n, s) => n + (s.cpuUs as number), 0);
  const orderBefore = before.reduce((n, s) => n + ((s.outOfOrder as number | undefined) ?? 0), 0);
  let cpuAfter = 0;
  let orderAfter = 0;
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
        // Every poll costs each consumer process CPU inside the measured window (an IPC round
        // trip and its RSS reading: 0.1–0.3 ms on the loaded 2-core machine), and a slower drain
        // is polled more often per message: at 10 ms that was 0.15–2.5 µs per message, more for
        // the slower side. The drain's time comes from the processes' own `lastAt`, so polling less
        // often only delays noticing the end (the CPU reading then includes that much idle time).
        intervalMs: 100,
        message: `${messages} messages of ${set.stream.stream} to be handled`,
      },
    );
    const lastAt = Math.max(...statuses.map((s) => s.lastAt as number));
    cpuAfter = statuses.reduce((n, s) => n + (s.cpuUs as number), 0);
    orderAfter = statuses.reduce((n, s) => n + ((s.outOfOrder as number | undefined) ?? 0), 0);
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
    outOfOrder: orderAfter - orderBefore,
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
