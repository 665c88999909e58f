import { randomBytes } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';
import { connectRedis, type RedisTarget } from './redis-client.js';
import { RedisUnavailableError } from './redis-unavailable.error.js';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
  }
}

export { resolveRedis, LOCAL_REDIS_URL } from './redis-resolve.js';
export type { RedisSource, ResolvedRedis, ResolveRedisOptions } from './redis-resolve.js';
export { RedisUnavailableError } from './redis-unavailable.error.js';
export { connectRedis, connectRedisCluster, type RedisTarget } from './redis-client.js';
export { probeRedis, waitForRedis, type RedisProbeResult } from './redis-probe.js';

/**
 * The Redis every suite uses, resolved once by the global setup (`test/support/global-setup.ts`).
 *
 * @throws RedisUnavailableError when the test runs without that setup and `REDIS_URL` is unset.
 */
export function redisUrl(): string {
  const provided = inject('redisUrl');
  if (provided) return provided;
  if (process.env.REDIS_URL) return process.env.REDIS_URL;
  throw new RedisUnavailableError(
    'no Redis URL: the e2e global setup (test/support/global-setup.ts) did not run and REDIS_URL ' +
      'is unset. Run the suite through `npx vitest run` (project e2e) or set REDIS_URL.',
  );
}

/** A key prefix no other test uses: `t<random>-<label>`. */
export function uniquePrefix(label: string): string {
  const safe = label.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 24);
  return `t${randomBytes(4).toString('hex')}-${safe}`;
}

/** Options of {@link createTestRedis}: ioredis options, and where to connect. */
export type TestRedisOptions = RedisOptions & {
  /** Another Redis than the suite's (a spawned server, a proxy, a node of a test cluster). */
  readonly url?: RedisTarget;
};

/**
 * A new ioredis client, on the suite's Redis unless `options.url` says otherwise; the options
 * override the defaults of `redis-client.ts` (2 retries per request). The caller quits it.
 */
export function createTestRedis(options: TestRedisOptions = {}): Redis {
  const { url, ...rest } = options;
  return connectRedis(url ?? redisUrl(), { lazyConnect: false, ...rest });
}

/** Deletes every key under `prefix:` (SCAN, so it never blocks the server). */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/**
 * Registers suite hooks: a client connected before the suite, and at the end every key under the
 * suite's unique prefix deleted and the client closed.
 */
export function useRedisPrefix(label: string): { prefix: string; redis: () => Redis } {
  const prefix = uniquePrefix(label);
  let client: Redis | undefined;
  beforeAll(() => {
    client = createTestRedis();
  });
  afterAll(async () => {
    if (!client) return;
    await cleanupPrefix(client, prefix);
    client.disconnect();
  });
  return {
    prefix,
    redis: () => {
      if (!client) throw new Error('useRedisPrefix: the Redis client is not connected yet');
      return client;
    },
  };
}
