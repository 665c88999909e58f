import { BenchChild, type BenchMessage } from '../support/bench-child.js';
import { BenchCoordinator, type BenchContext } from '../support/bench-context.js';
import { median, preciseNow, summarize, type LatencySummary } from '../support/stats.js';
import { waitForValue } from '../../test/support/wait.js';

/** One rebalance event. */
export interface RebalanceEvent {
  readonly kind: 'join' | 'sigterm' | 'sigkill';
  /** join: the coordinator's MEMBER_JOINED (join heartbeat committed; ms clock) → the new member's first handled message. Leave/crash: the signal → each moved shard's first message handled elsewhere (p50 and max over the shards). */
  readonly handoffMs: number;
  readonly handoffMaxMs: number;
  /** Per moved shard: the gap between its last message handled by the old owner and the first by the new one. */
  readonly stallMs: readonly number[];
  readonly movedShards: readonly number[];
  /** join only: from the runtime's `joining` event (its first requests included) to the first message. */
  readonly fromProcessJoiningMs?: number;
}

/** The rebalance scenario's results. */
export interface RebalanceResult {
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly members: number;
  readonly ratePerSecond: number;
  readonly events: readonly RebalanceEvent[];
  readonly join: {
    readonly handoffP50: number;
    readonly handoffMax: number;
    readonly fromProcessJoiningP50: number;
    readonly stall: LatencySummary;
  };
  readonly sigterm: {
    readonly handoffP50: number;
    readonly handoffMax: number;
    readonly stall: LatencySummary;
  };
  readonly sigkill: {
    readonly handoffP50: number;
    readonly handoffMax: number;
    readonly stall: LatencySummary;
  };
}

const SHARDS = 8;
const HEARTBEAT_INTERVAL_MS = 3000;
const RATE = 1000;
const GROUP = 'rebal';

/** Handled messages per shard: [handledAt, member name], in arrival order. */
type Timeline = Map<number, Array<[number, string]>>;

/**
 * Rebalance with a 3 s heartbeat interval: three members handle a steady 1,000 msg/s over 8
 * shards; a fourth joins (join → its first message), then gets SIGTERM (signal → its shards
 * handled elsewhere), and in separate rounds SIGKILL (the session timeout must expire first).
 * Every member streams the time it handled each message, so the stall of every moved shard is
 * measured directly.
 */
export async function runRebalanceBench(ctx: BenchContext): Promise<RebalanceResult> {
  const sessionTimeoutMs = ctx.profile.sessionTimeoutMs;
  const coordinator = await BenchCoordinator.start(ctx, 'rebal', {
    HEARTBEAT_INTERVAL_MS: String(HEARTBEAT_INTERVAL_MS),
    SESSION_TIMEOUT_MS: String(sessionTimeoutMs),
  });
  const timeline: Timeline = new Map();
  const lifecycle = new Map<string, Array<[string, number]>>();
  const members = new Map<string, BenchChild>();
  let producer: BenchChild | undefined;
  let serial = 0;
  const common = {
    COORDINATOR_URL: coordinator.url,
    COORDINATOR_TOKEN: coordinator.token,
    REDIS_URL: ctx.redisUrl,
  };

  const startMember = async (): Promise<string> => {
    const name = `m${serial++}`;
    const listener = (m: BenchMessage): void => {
      if (m.type === 'handled') {
        for (const [shard, at] of m.items as Array<[number, number, number]>) {
          let list = timeline.get(shard);
          if (!list) timeline.set(shard, (list = []));
          list.push([at, name]);
        }
      } else if (m.type === 'lifecycle') {
        let list = lifecycle.get(name);
        if (!list) lifecycle.set(name, (list = []));
        list.push([m.event as string, m.at as number]);
      }
    };
    const child = await BenchChild.start({
      worker: 'member-app',
      name,
      env: { ...common, GROUP, BENCH_STREAM: 'rebal', BENCH_TIMELINE: '1' },
      listener,
    });
    members.set(name, child);
    return name;
  };
  const heldBy = async (name: string): Promise<number[]> =>
    (await (members.get(name) as BenchChild).request({ type: 'status' }, 'status'))
      .held as number[];
  const stable = (count: number): Promise<true> =>
    waitForValue(
      async () => {
        const d = await coordinator.describe(GROUP);
        if (d?.state !== 'STABLE' || d.members.length !== count) return undefined;
        const held = await Promise.all([...members.keys()].map(heldBy));
        return held.reduce((n, h) => n + h.length, 0) === SHARDS ? true : undefined;
      },
      {
        timeoutMs: sessionTimeoutMs + 60_000,
        message: `group ${GROUP} to be stable with ${count} members`,
      },
    );
  /** First message of `shard` handled after `since` by someone other than `not`. */
  const firstElsewhere = (shard: number, since: number, not: string): number | undefined =>
    timeline.get(shard)?.find(([at, who]) => at > since && who !== not)?.[0];
  const lastBy = (shard: number, who: string, before: number): number | undefined => {
    const list = timeline.get(shard) ?? [];
    for (let i = list.length - 1; i >= 0; i--) {
      const [at, by] = list[i] as [number, string];
      if (by === who && at <= before) return at;
    }
    return undefined;
  };
  const gapAround = (shard: number, newOwner: string): number => {
    // largest gap between consecutive handled messages of the shard around the first message of newOwner
    const list = timeline.get(shard) ?? [];
    const i = list.findIndex(([, who]) => who === newOwner);
    if (i <= 0) return Number.NaN;
    return (list[i] as [number, string])[0] - (list[i - 1] as [number, string])[0];
  };

  const events: RebalanceEvent[] = [];
  try {
    await coordinator.createStream('rebal', SHARDS);
    for (let i = 0; i < 3; i++) await startMember();
    await stable(3);
    producer = await BenchChild.start({
      worker: 'rate-producer',
      name: 'rebal-producer',
      env: common,
    });
    const producing = producer.request(
      { type: 'produce', stream: 'rebal', rate: RATE, durationMs: 3_600_000 },
      'produced',
      3_700_000,
    );
    // observed below; if a step fails first, the producer is stopped and this rejects unobserved
    producing.catch(() => undefined);
    await waitForValue(() => (timeline.size === SHARDS ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: 'messages to flow',
    });

    const rounds = ctx.profile.rebalanceReps + ctx.profile.crashReps;
    for (let round = 0; round < rounds; round++) {
      // join
      const name = await startMember();
      const joinAt = await waitForValue(
        () => lifecycle.get(name)?.find(([e]) => e === 'joining')?.[1],
        { timeoutMs: 30_000, intervalMs: 20, message: `${name} to join` },
      );
      await stable(4);
      const moved = await heldBy(name);
      const firsts = await waitForValue(
        () => {
          const at = moved.map((s) => timeline.get(s)?.find(([, who]) => who === name)?.[0]);
          return at.every((a) => a !== undefined) ? (at as number[]) : undefined;
        },
        {
          timeoutMs: 30_000,
          intervalMs: 20,
          message: `${name}'s first message on each moved shard`,
        },
      );
      const firstAt = Math.min(...firsts);
      // the coordinator's MEMBER_JOINED (its join heartbeat committed): the protocol-level join
      const memberId = (
        await (members.get(name) as BenchChild).request({ type: 'status' }, 'status')
      ).memberId as string;
      const page = await coordinator.api.get<{
        events: Array<{ type: string; at: string; data: { memberId?: string } }>;
      }>(`/v1/groups/${GROUP}/events?limit=1000`);
      const joined = page.body.events
        .filter((e) => e.type === 'MEMBER_JOINED' && e.data.memberId === memberId)
        .at(-1);
      const joinedAt = joined ? Date.parse(joined.at) : Number.NaN;
      events.push({
        kind: 'join',
        handoffMs: firstAt - joinedAt,
        handoffMaxMs: firstAt - joinedAt,
        fromProcessJoiningMs: firstAt - joinAt,
        movedShards: moved,
        stallMs: moved.map((s) => gapAround(s, name)),
      });
      if (process.env.BENCH_DEBUG) {
        for (const [who, list] of lifecycle)
          for (const [e, at] of list)
            if (at >= joinAt - 50 && at <= firstAt + 50)
              ctx.log(`  ${who} ${e} +${Math.round(at - joinAt)} ms`);
      }
      ctx.log(
        `rebalance join: first message ${Math.round(firstAt - joinedAt)} ms after the coordinator committed the join (${Math.round(firstAt - joinAt)} ms after the runtime started joining; ${moved.length} shards moved)`,
      );
      await new Promise((r) => setTimeout(r, 300));
      // leave (graceful) or crash
      const crash = round >= ctx.profile.rebalanceReps;
      const child = members.get(name) as BenchChild;
      const signalAt = preciseNow();
      child.signal(crash ? 'SIGKILL' : 'SIGTERM');
      const handoffs = await waitForValue(
        () => {
          const at = moved.map((s) => firstElsewhere(s, signalAt, name));
          return at.every((a) => a !== undefined) ? (at as number[]) : undefined;
        },
        {
          timeoutMs: sessionTimeoutMs + 30_000,
          intervalMs: 20,
          message: `${name}'s shards to be handled elsewhere`,
        },
      );
      await child.whenExited();
      members.delete(name);
      const stalls = moved.map(
        (s, i) =>
          (handoffs[i] as number) - (lastBy(s, name, signalAt + sessionTimeoutMs * 2) ?? signalAt),
      );
      const delays = handoffs.map((h) => h - signalAt);
      events.push({
        kind: crash ? 'sigkill' : 'sigterm',
        handoffMs: median(delays),
        handoffMaxMs: Math.max(...delays),
        movedShards: moved,
        stallMs: stalls,
      });
      ctx.log(
        `rebalance ${crash ? 'SIGKILL' : 'SIGTERM'}: shards handled elsewhere after p50 ${Math.round(median(delays))} ms, max ${Math.round(Math.max(...delays))} ms`,
      );
      await stable(3);
    }
    producer.send({ type: 'stop' });
    await producing;
  } finally {
    await producer?.stop();
    await Promise.all([...members.values()].map((m) => m.stop()));
    await coordinator.stop();
  }
  const of = (kind: RebalanceEvent['kind']): RebalanceEvent[] =>
    events.filter((e) => e.kind === kind);
  const summary = (kind: RebalanceEvent['kind']) => ({
    handoffP50: median(of(kind).map((e) => e.handoffMs)),
    handoffMax: Math.max(...of(kind).map((e) => e.handoffMaxMs)),
    stall: summarize(of(kind).flatMap((e) => e.stallMs.filter((x) => Number.isFinite(x)))),
  });
  return {
    heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
    sessionTimeoutMs,
    members: 3,
    ratePerSecond: RATE,
    events,
    join: {
      ...summary('join'),
      fromProcessJoiningP50: median(of('join').map((e) => e.fromProcessJoiningMs ?? Number.NaN)),
    },
    sigterm: summary('sigterm'),
    sigkill: summary('sigkill'),
  };
}
