import { Agent, request } from 'node:http';
import {
  type HeartbeatRequest,
  type HeartbeatResponse,
  KeySpace,
  type StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import { summarize } from '../support/stats.js';
import { env, ipc } from './worker-ipc.js';
import { connectRedis } from '../../test/support/redis-client.js';

/**
 * Load generator for the coordinator: simulated members over keep-alive HTTP/1.1
 * (`http.Agent({keepAlive: true})`). A simulated member releases revoked shards and takes granted
 * ones at once, and reports `ownedShards` only when they changed (absent = unchanged).
 * Commands: `join` (join every member and reconcile to a fixed point), `load` (heartbeats
 * round-robin over the members, open loop at `rate`/s or closed loop with `concurrency`),
 * `converge` (a live group behaving like the member runtime — interval heartbeats, immediate ones
 * after a revocation and on nudges — that one new member joins).
 * Environment: COORDINATOR_URL, COORDINATOR_TOKEN, REDIS_URL, KEY_PREFIX.
 */
const base = new URL(env('COORDINATOR_URL'));
const token = env('COORDINATOR_TOKEN');
const agent = new Agent({ keepAlive: true, maxSockets: 256 });

interface SimMember {
  readonly group: string;
  readonly memberId: string;
  readonly stream: string;
  epoch: number;
  owned: StreamShards[];
  ownedDirty: boolean;
  /** Must heartbeat again soon (revoking, awaiting release, unreported change). */
  unsettled: boolean;
  /** The last response took shards away (the runtime then heartbeats at once, after releasing). */
  revokedLast: boolean;
  heartbeats: number;
}

interface Reply<T> {
  readonly status: number;
  readonly body: T;
  readonly ms: number;
}

function post<T>(path: string, body: unknown, method = 'POST'): Promise<Reply<T>> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: base.hostname,
        port: base.port,
        path,
        method,
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          ...(payload === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({
            status: res.statusCode ?? 0,
            body: (text ? JSON.parse(text) : null) as T,
            ms: performance.now() - started,
          });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(30_000, () =>
      req.destroy(new Error(`${method} ${path}: no answer within 30 s`)),
    );
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

function sameShards(a: readonly StreamShards[], b: readonly StreamShards[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** One heartbeat of `m` (full on join); applies the response like the member runtime would. */
async function heartbeat(m: SimMember, full = false): Promise<Reply<HeartbeatResponse>> {
  const body: HeartbeatRequest = { memberId: m.memberId, memberEpoch: m.epoch };
  if (full) {
    body.rebalanceTimeoutMs = 60_000;
    body.subscribedStreams = [m.stream];
  }
  if (full || m.ownedDirty) body.ownedShards = m.owned;
  m.ownedDirty = false;
  m.heartbeats++;
  const reply = await post<HeartbeatResponse>(`/v1/groups/${m.group}/heartbeat`, body);
  if (reply.status !== 200) {
    m.unsettled = true;
    if (reply.status === 409) {
      m.epoch = 0;
      m.owned = [];
    }
    return reply;
  }
  const r = reply.body;
  m.epoch = r.memberEpoch;
  let revoked = false;
  if (r.assignment) {
    const next = r.assignment.shards.map((s) => ({ stream: s.stream, shards: s.shards }));
    const had = new Set(m.owned.flatMap((s) => s.shards));
    const keeps = new Set(next.flatMap((s) => s.shards));
    revoked = [...had].some((s) => !keeps.has(s));
    if (!sameShards(next, m.owned)) {
      m.owned = next;
      m.ownedDirty = true;
    }
  }
  m.revokedLast = revoked;
  m.unsettled =
    revoked || m.ownedDirty || r.diff.revoking.length > 0 || r.diff.awaitingRelease.length > 0;
  return reply;
}

async function pool<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

let members: SimMember[] = [];

async function join(
  groups: readonly string[],
  perGroup: number,
  stream: string,
  concurrency: number,
): Promise<{ members: number; ms: number; rounds: number; errors: number }> {
  const started = performance.now();
  members = groups.flatMap((group) =>
    Array.from({ length: perGroup }, (_, i): SimMember => ({
      group,
      memberId: `sim-${group}-${i}`,
      stream,
      epoch: 0,
      owned: [],
      ownedDirty: false,
      unsettled: true,
      revokedLast: false,
      heartbeats: 0,
    })),
  );
  let errors = 0;
  await pool(members, concurrency, async (m) => {
    if ((await heartbeat(m, true)).status !== 200) errors++;
  });
  let rounds = 0;
  for (let settledPasses = 0; rounds < 200 && settledPasses < 2; rounds++) {
    // until nothing moves: the unsettled members, then whole passes until no epoch changes (a
    // member not affected by a rebalance still adopts the new epoch in a heartbeat that commits)
    const unsettled = members.filter((m) => m.unsettled);
    const todo = unsettled.length > 0 ? unsettled : members;
    let moved = 0;
    await pool(todo, concurrency, async (m) => {
      const epoch = m.epoch;
      const reply = await heartbeat(m, m.epoch === 0);
      if (reply.status !== 200) errors++;
      if (m.epoch !== epoch) moved++;
    });
    settledPasses = unsettled.length === 0 && moved === 0 ? settledPasses + 1 : 0;
  }
  return { members: members.length, ms: performance.now() - started, rounds, errors };
}

async function load(
  rate: number,
  concurrency: number,
  durationMs: number,
): Promise<Record<string, unknown>> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let errors = 0;
  let cursor = 0;
  const one = async (): Promise<void> => {
    const m = members[cursor++ % members.length] as SimMember;
    try {
      const reply = await heartbeat(m, m.epoch === 0);
      latencies.push(reply.ms);
      statuses[reply.status] = (statuses[reply.status] ?? 0) + 1;
    } catch {
      errors++;
    }
  };
  const started = performance.now();
  if (rate > 0) {
    let sent = 0;
    const inFlight = new Set<Promise<void>>();
    while (performance.now() - started < durationMs) {
      const due = Math.floor(((performance.now() - started) * rate) / 1000);
      while (sent < due && inFlight.size < 4096) {
        sent++;
        const p = one().finally(() => inFlight.delete(p));
        inFlight.add(p);
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    await Promise.all(inFlight);
  } else {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() - started < durationMs) await one();
      }),
    );
  }
  const ms = performance.now() - started;
  return {
    count: latencies.length,
    ms,
    perSecond: (latencies.length / ms) * 1000,
    latency: summarize(latencies),
    errors,
    statuses,
  };
}

/** A live group like the member runtime drives it; one member joins; time until STABLE. */
async function converge(
  group: string,
  stream: string,
  count: number,
  intervalMs: number,
): Promise<Record<string, unknown>> {
  await join([group], count, stream, 16);
  const live = [...members];
  const nudges = connectRedis(env('REDIS_URL'));
  const channel = new KeySpace(env('KEY_PREFIX')).nudgeChannel(group);
  const byId = new Map(live.map((m) => [m.memberId, m]));
  let running = true;
  const timers = new Map<SimMember, NodeJS.Timeout>();
  const inFlight = new Set<SimMember>();
  const again = new Set<SimMember>();
  const trace: Array<[number, string, string]> = [];
  let t0 = Number.NaN;
  const beat = (m: SimMember, why = 'interval'): void => {
    if (!running) return;
    if (!Number.isNaN(t0)) trace.push([Math.round(performance.now() - t0), m.memberId, why]);
    if (inFlight.has(m)) {
      again.add(m);
      return;
    }
    clearTimeout(timers.get(m));
    inFlight.add(m);
    void heartbeat(m, m.epoch === 0)
      .catch(() => undefined)
      .then(() => {
        inFlight.delete(m);
        // the runtime heartbeats at once after releasing shards (released instantly here)
        const now = again.delete(m) || m.revokedLast;
        if (running)
          timers.set(
            m,
            setTimeout(() => beat(m, now ? 'after-revoke' : 'interval'), now ? 0 : intervalMs),
          );
      });
  };
  nudges.on('message', (_c: string, message: string) => {
    for (const id of message.split('\n')) {
      const m = byId.get(id);
      if (m) beat(m, 'nudge');
    }
  });
  await nudges.subscribe(channel);
  // staggered interval heartbeats
  live.forEach((m, i) =>
    timers.set(
      m,
      setTimeout(() => beat(m), (i * intervalMs) / live.length),
    ),
  );
  await new Promise((r) => setTimeout(r, 200));
  const before = new Map(live.map((m) => [m.memberId, JSON.stringify(m.owned)]));
  const counts = new Map(live.map((m) => [m.memberId, m.heartbeats]));
  const joiner: SimMember = {
    group,
    memberId: `sim-${group}-joiner`,
    stream,
    epoch: 0,
    owned: [],
    ownedDirty: false,
    unsettled: true,
    revokedLast: false,
    heartbeats: 0,
  };
  byId.set(joiner.memberId, joiner);
  live.push(joiner);
  counts.set(joiner.memberId, 0);
  const started = performance.now();
  t0 = started;
  beat(joiner, 'join');
  let stableAt = Number.NaN;
  let settledAt = Number.NaN;
  let settledCounts: number[] = [];
  const affectedNow = (): SimMember[] =>
    live.filter((m) => m === joiner || before.get(m.memberId) !== JSON.stringify(m.owned));
  const deadline = started + 10 * intervalMs;
  while (performance.now() < deadline) {
    const d = await post<DescribedLite>(`/v1/groups/${group}`, undefined, 'GET');
    if (d.status === 200) {
      if (Number.isNaN(settledAt) && joiner.owned.length > 0 && d.body.members.every(settled)) {
        settledAt = performance.now();
        settledCounts = affectedNow().map((m) => m.heartbeats - (counts.get(m.memberId) ?? 0));
      }
      if (d.body.state === 'STABLE' && !Number.isNaN(settledAt)) {
        stableAt = performance.now();
        break;
      }
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  running = false;
  for (const t of timers.values()) clearTimeout(t);
  await nudges.quit();
  const affected = affectedNow();
  return {
    settledMs: settledAt - started,
    stableMs: stableAt - started,
    affectedMembers: affected.length,
    roundTripsJoiner: settledCounts[affected.indexOf(joiner)] ?? Number.NaN,
    roundTripsOthersMax: Math.max(0, ...settledCounts.filter((_, i) => affected[i] !== joiner)),
    joinerShards: joiner.owned.flatMap((s) => s.shards).length,
    trace: trace.slice(0, 200),
  };
}

/** The part of a group description the convergence check reads. */
interface DescribedLite {
  readonly state: string;
  readonly members: ReadonlyArray<{
    readonly assignment: readonly StreamShards[];
    readonly target: readonly StreamShards[];
    readonly pendingRevocation: readonly StreamShards[];
  }>;
}

/** A member whose shards are at their target (its epoch may still be the old one). */
function settled(m: DescribedLite['members'][number]): boolean {
  const flat = (a: readonly StreamShards[]): string =>
    JSON.stringify(a.map((s) => [s.stream, s.shards]));
  return (
    m.pendingRevocation.every((p) => p.shards.length === 0) && flat(m.assignment) === flat(m.target)
  );
}

ipc.onCommand(async (command) => {
  switch (command.type) {
    case 'join':
      ipc.send({
        type: 'joined',
        ...(await join(
          command.groups as string[],
          command.perGroup as number,
          command.stream as string,
          (command.concurrency as number) ?? 32,
        )),
      });
      return;
    case 'load':
      ipc.send({
        type: 'loaded',
        ...(await load(
          command.rate as number,
          command.concurrency as number,
          command.durationMs as number,
        )),
      });
      return;
    case 'converge':
      ipc.send({
        type: 'converged',
        ...(await converge(
          command.group as string,
          command.stream as string,
          command.members as number,
          command.intervalMs as number,
        )),
      });
      return;
    default:
      throw new Error(`heartbeat-load: unknown command ${command.type}`);
  }
});

ipc.send({ type: 'ready', pid: process.pid });
