import { join } from 'node:path';
import type { Redis } from 'ioredis';
import {
  createRedisConnection,
  type RedisConnection,
} from '@redis-stream-coordinator/nestjs/internal';
import {
  type GroupEventEntry,
  KeySpace,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { handledCount } from '../../support/handled-records.js';
import { KeyedLoad } from '../../support/keyed-load.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { WorkerProcess } from '../../support/worker-process.js';
import type { CoordinatorFixture } from '../../coordinator/support/coordinator-fixture.js';
import { waitForNoProblems } from '../../support/wait.js';

/** Settings every reshard suite starts its coordinator with (fast timers; overridable). */
export const FAST_ENV: Readonly<Record<string, string>> = {
  HEARTBEAT_INTERVAL_MS: '250',
  SESSION_TIMEOUT_MS: '3000',
  RESHARD_POLL_MS: '50',
  RESHARD_IDLE_GROUP_GRACE_MS: '600000',
};

/** A coordinator, example workers writing handled records, a producer: one reshard suite's world. */
export interface ReshardCluster {
  readonly prefix: string;
  readonly group: string;
  readonly stream: string;
  redis(): Redis;
  coordinator(): CoordinatorProcess;
  admin(): CoordinatorApi;
  readonly workers: WorkerProcess[];
  /** Record file of every worker ever started, in start order. */
  readonly files: string[];
  /** Starts one more worker (its record file is added to `files`). */
  addWorker(env?: Readonly<Record<string, string>>): Promise<WorkerProcess>;
  /** A steady keyed producer on the stream (stopped by the suite's cleanup if still running). */
  load(rate: number, keys?: number): KeyedLoad;
}

/**
 * Registers suite hooks: a coordinator on a unique prefix with `env` (plus {@link FAST_ENV}), the
 * stream created with `shards` shards, and `workers` example workers in `group`. Everything is
 * stopped and deleted after the suite.
 */
export function useReshardCluster(
  label: string,
  options: {
    shards: number;
    workers: number;
    env?: Readonly<Record<string, string>>;
    workerEnv?: Readonly<Record<string, string>>;
  },
): ReshardCluster {
  const redis = useRedisPrefix(label);
  const group = 'workers';
  const stream = 'orders';
  let coordinator: CoordinatorProcess | undefined;
  let dir: TempDir | undefined;
  let connection: RedisConnection | undefined;
  const workers: WorkerProcess[] = [];
  const files: string[] = [];
  const loads: KeyedLoad[] = [];
  const running = (): CoordinatorProcess => {
    if (!coordinator) throw new Error(`coordinator of "${label}" is not running`);
    return coordinator;
  };
  const cluster: ReshardCluster = {
    prefix: redis.prefix,
    group,
    stream,
    redis: redis.redis,
    coordinator: running,
    admin: () => new CoordinatorApi(running().url, TEST_TOKENS.admin),
    workers,
    files,
    async addWorker(env = {}) {
      const file = join((dir as TempDir).path, `worker-${files.length}.jsonl`);
      files.push(file);
      const worker = await WorkerProcess.start({
        coordinatorUrl: running().url,
        group,
        recordFile: file,
        env: { ...options.workerEnv, ...env },
        readyTimeoutMs: 60_000,
      });
      workers.push(worker);
      return worker;
    },
    load(rate, keys = 200) {
      connection ??= createRedisConnection(redisUrl(), 'command');
      const load = new KeyedLoad({
        connection,
        coordinatorUrl: running().url,
        token: TEST_TOKENS.member,
        stream,
        keys,
        rate,
      });
      loads.push(load);
      return load;
    },
  };
  beforeAll(async () => {
    dir = createTempDir(label);
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { ...FAST_ENV, ...options.env },
      readyTimeoutMs: 60_000,
    });
    const created = await cluster.admin().put(`/v1/streams/${stream}`, { shards: options.shards });
    if (created.status !== 201)
      throw new Error(`PUT stream → ${created.status} ${JSON.stringify(created.body)}`);
    await Promise.all(Array.from({ length: options.workers }, () => cluster.addWorker()));
  });
  afterAll(async () => {
    for (const load of loads) await load.stop();
    await Promise.all(workers.map((w) => w.stop()));
    await coordinator?.stop();
    connection?.disconnect();
    dir?.remove();
  });
  return cluster;
}

/**
 * Like `useCoordinator` (test/coordinator/support), with {@link FAST_ENV} and a generous ready
 * timeout (the machine may be busy): a coordinator on a unique prefix for one suite.
 */
export function useReshardCoordinator(
  label: string,
  env: Readonly<Record<string, string>> = {},
): CoordinatorFixture {
  const redis = useRedisPrefix(label);
  let child: CoordinatorProcess | undefined;
  beforeAll(async () => {
    child = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { ...FAST_ENV, ...env },
      readyTimeoutMs: 60_000,
    });
  });
  afterAll(async () => {
    await child?.stop();
  });
  const running = (): CoordinatorProcess => {
    if (!child) throw new Error(`coordinator "${label}" is not running`);
    return child;
  };
  return {
    prefix: redis.prefix,
    redis: redis.redis,
    coordinator: running,
    admin: () => new CoordinatorApi(running().url, TEST_TOKENS.admin),
    member: () => new CoordinatorApi(running().url, TEST_TOKENS.member),
  };
}

/** `GET /v1/streams/{stream}`. */
export async function routingOf(api: CoordinatorApi, stream: string): Promise<StreamRouting> {
  const res = await api.get<StreamRouting>(`/v1/streams/${stream}`);
  if (res.status !== 200)
    throw new Error(`GET /v1/streams/${stream} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Starts a reshard that must be accepted (202); returns the routing body. */
export async function reshard(
  api: CoordinatorApi,
  stream: string,
  shards: number,
  mode?: 'strict' | 'relaxed',
): Promise<StreamRouting> {
  const res = await api.post<StreamRouting>(`/v1/streams/${stream}/reshard`, {
    shards,
    ...(mode ? { mode } : {}),
  });
  if (res.status !== 202)
    throw new Error(`reshard ${stream} → ${shards}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Polls until the stream's reshard is done (`resharding: null`), returning the final routing. */
export async function waitReshardDone(
  api: CoordinatorApi,
  stream: string,
  timeoutMs: number,
): Promise<StreamRouting> {
  let last: StreamRouting | undefined;
  await waitForNoProblems(
    async () => {
      last = await routingOf(api, stream);
      return last.resharding === null ? [] : [JSON.stringify(last.resharding).slice(0, 600)];
    },
    {
      timeoutMs,
      intervalMs: 100,
      message: `reshard of ${stream} completes`,
      retryErrors: true,
    },
  );
  return last as StreamRouting;
}

/** Polls until `count` distinct messages were handled across `files`; on timeout the error says where things stand. */
export async function waitHandled(
  files: readonly string[],
  count: number,
  timeoutMs: number,
  diagnose?: () => Promise<string>,
): Promise<void> {
  try {
    await waitForNoProblems(
      () => {
        const n = handledCount(files);
        return n >= count ? [] : [`${n} of ${count} handled`];
      },
      {
        timeoutMs,
        intervalMs: 200,
        message: `${count} messages handled`,
        retryErrors: true,
      },
    );
  } catch (error) {
    if (!diagnose) throw error;
    const detail = await diagnose().catch((e: unknown) => `diagnosis failed: ${String(e)}`);
    throw new Error(`${(error as Error).message}\n${detail}`, { cause: error });
  }
}

/** A snapshot for failure messages: routing, the group, and each current shard's consumer groups. */
export async function diagnoseCluster(c: ReshardCluster): Promise<string> {
  const api = c.admin();
  const routing = await routingOf(api, c.stream);
  const group = await api.get(`/v1/groups/${c.group}`);
  const shards: string[] = [];
  for (const s of routing.shards) {
    const info = await c
      .redis()
      .xinfo('GROUPS', s.key)
      .catch((e: unknown) => String(e));
    const meta = await c.redis().hgetall(`${s.key}:meta`);
    const len = await c.redis().xlen(s.key);
    shards.push(`${s.id}: len=${len} groups=${JSON.stringify(info)} meta=${JSON.stringify(meta)}`);
  }
  const workers = await Promise.all(
    c.workers.map(async (w) => (w.running ? w.status().catch((e: unknown) => String(e)) : 'dead')),
  );
  return [
    `routing: ${JSON.stringify({ epoch: routing.routingEpoch, shards: routing.shards.map((x) => x.id), resharding: routing.resharding })}`,
    `group: ${JSON.stringify(group.body)}`,
    ...shards,
    `workers: ${JSON.stringify(workers)}`,
    `coordinator output: ${c.coordinator().output().slice(-3000)}`,
    ...c.workers.map((w, i) => `worker ${i} output: ${w.output().slice(-2000)}`),
  ].join('\n');
}

/** Every event of a group's log (paged). */
export async function groupEvents(api: CoordinatorApi, group: string): Promise<GroupEventEntry[]> {
  const out: GroupEventEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const res = await api.get<{ events: GroupEventEntry[] }>(
      `/v1/groups/${group}/events?limit=1000${after ? `&after=${after}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`events of ${group} → ${res.status}`);
    out.push(...res.body.events);
    if (res.body.events.length < 1000) return out;
    after = res.body.events.at(-1)?.id;
  }
}

/** Every event of the stream's log (creation and reshard steps), straight from Redis. */
export async function streamEvents(
  redis: Redis,
  prefix: string,
  stream: string,
): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const entries = await redis.xrange(new KeySpace(prefix).streamEventsKey(stream), '-', '+');
  return entries.map(([, fields]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
    return { type: f.type ?? '', data: JSON.parse(f.data ?? '{}') as Record<string, unknown> };
  });
}
