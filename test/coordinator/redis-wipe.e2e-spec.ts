import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  KeySpace,
  shardMetaKey,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import { uniquePrefix, createTestRedis } from '../support/redis.js';
import { waitForNoProblems } from '../support/wait.js';

interface HealthBody {
  status: string;
  details?: Record<string, { status: string; maxmemoryPolicy?: string; warning?: string }>;
}

const DECLARED = { orders: 4, payments: 2 } as const;

/**
 * A Redis that loses everything (FLUSHALL, or a restart without its data) and a Redis that may
 * evict keys: the coordinator declares its `STREAMS` again by itself, and says at start and in
 * `/health/ready` when Redis's `maxmemory-policy` would evict keys.
 */
describe('Redis wiped or evicting', () => {
  let redis: RestartableRedis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    await coordinator?.stop();
    coordinator = undefined;
    client?.disconnect();
    client = undefined;
    await redis?.dispose();
    redis = undefined;
  });
  afterAll(async () => {
    await redis?.dispose();
  });

  async function start(
    args: readonly string[] = [],
    beforeCoordinator: (client: Redis) => Promise<unknown> = () => Promise.resolve(),
  ): Promise<{
    api: CoordinatorApi;
    keys: KeySpace;
    redis: RestartableRedis;
    client: Redis;
  }> {
    redis = await startRestartableRedis({ args });
    client = createTestRedis({ url: redis.url });
    client.on('error', () => undefined); // refused while the test restarts its Redis
    await beforeCoordinator(client);
    const prefix = uniquePrefix('wipe');
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: redis.url,
      env: {
        STREAMS: Object.entries(DECLARED)
          .map(([s, n]) => `${s}:${n}`)
          .join(','),
        HEARTBEAT_INTERVAL_MS: '300',
        SESSION_TIMEOUT_MS: '3000',
      },
    });
    return {
      api: new CoordinatorApi(coordinator.url, TEST_TOKENS.member),
      keys: new KeySpace(prefix),
      redis,
      client,
    };
  }

  /** Problems left before every declared stream is back with its shards open for writes. */
  async function declaredStreamsProblems(
    api: CoordinatorApi,
    keys: KeySpace,
    redisClient: Redis,
  ): Promise<string[]> {
    const problems: string[] = [];
    for (const [stream, shards] of Object.entries(DECLARED)) {
      const res = await api.get<StreamRouting>(`/v1/streams/${stream}`);
      if (res.status !== 200) {
        problems.push(`${stream}: ${res.status}`);
        continue;
      }
      if (res.body.shards.length !== shards) problems.push(`${stream}: ${res.body.shards.length}`);
      for (const s of res.body.shards) {
        const state = await redisClient.hget(shardMetaKey(s.key), 'state');
        if (state !== 'open') problems.push(`${stream}/${s.id} state ${state}`);
      }
    }
    return problems;
  }

  it('declares STREAMS again after FLUSHALL and after a restart that lost the data', async () => {
    const env = await start();
    expect(await declaredStreamsProblems(env.api, env.keys, env.client)).toEqual([]);

    await env.client.flushall();
    expect((await env.api.get(`/v1/streams/orders`)).status).toBe(404);
    await waitForNoProblems(() => declaredStreamsProblems(env.api, env.keys, env.client), {
      timeoutMs: 10_000,
      intervalMs: 100,
      message: 'STREAMS declared again after FLUSHALL',
      retryErrors: true,
    });

    // A restart from an empty data directory: everything, the catalog included, is gone.
    await env.client.set('wipe-marker', '1');
    await env.redis.kill();
    rmSync(join(env.redis.dir, 'appendonlydir'), { recursive: true, force: true });
    await env.redis.restart();
    expect(await env.client.get('wipe-marker')).toBeNull();
    await waitForNoProblems(() => declaredStreamsProblems(env.api, env.keys, env.client), {
      timeoutMs: 15_000,
      intervalMs: 100,
      message: 'STREAMS declared again after Redis restarted empty',
      retryErrors: true,
    });
    expect(coordinator?.output()).toMatch(/Redis lost its data \(the incarnation marker is gone/);

    // noeviction (the default): no warning in readiness
    const ready = await new CoordinatorApi(coordinator?.url ?? '').get<HealthBody>('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details?.redis).toEqual({ status: 'up' });
  });

  it('warns at start and in /health/ready when Redis may evict keys', async () => {
    await start(['--maxmemory', '256mb', '--maxmemory-policy', 'allkeys-lru']);
    expect(coordinator?.output()).toMatch(/maxmemory-policy is allkeys-lru/);
    // health details are shown to authenticated callers only (docs/protocol.md §15.1)
    const withToken = new CoordinatorApi(coordinator?.url ?? '');
    const ready = await withToken.get<HealthBody>('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details?.redis).toMatchObject({
      status: 'up',
      maxmemoryPolicy: 'allkeys-lru',
    });
    expect(ready.body.details?.redis?.warning).toMatch(/noeviction/);

    // fixed at runtime: the warning goes away
    await client?.config('SET', 'maxmemory-policy', 'noeviction');
    const fixed = await withToken.get<HealthBody>('/health/ready');
    expect(fixed.body.details?.redis).toEqual({ status: 'up' });
  });

  it('starts and stays ready when CONFIG is refused (ACL, managed Redis), and says so', async () => {
    // as on a managed Redis: the coordinator's user may not run CONFIG at all
    await start([], (c) => c.call('ACL', 'SETUSER', 'default', '-config'));
    await expect(client?.config('GET', 'maxmemory-policy')).rejects.toThrow(/NOPERM/);
    expect(coordinator?.output()).toMatch(/could not read Redis maxmemory-policy \(NOPERM/);
    const ready = await new CoordinatorApi(coordinator?.url ?? '').get<HealthBody>('/health/ready');
    expect(ready.status, JSON.stringify(ready.body)).toBe(200);
    expect(ready.body.details?.redis).toMatchObject({ status: 'up', maxmemoryPolicy: null });
    expect(ready.body.details?.redis?.warning).toMatch(/make sure it is noeviction/);
    // and the rest of the coordinator works: the declared streams are there
    expect(
      (
        await new CoordinatorApi(coordinator?.url ?? '', TEST_TOKENS.member).get(
          '/v1/streams/orders',
        )
      ).status,
    ).toBe(200);
  });
});
