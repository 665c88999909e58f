import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import { Redis as Redis5, type RedisOptions as Redis5Options } from 'ioredis5';

/**
 * The one place test, benchmark and demo code makes ioredis clients (no vitest import, so
 * `bench/` and `scripts/` use it too; specs use `createTestRedis` in `redis.ts`, which defaults
 * the URL to the suite's Redis).
 */

/** Where a client connects: a `redis://` URL, or one server's host and port. */
export type RedisTarget = string | { readonly host: string; readonly port: number };

/**
 * What every client starts from unless the caller says otherwise: a command fails after 2
 * reconnect attempts (ioredis' default is 20), so a test whose Redis went away fails fast.
 */
export const TEST_CLIENT_DEFAULTS: Readonly<RedisOptions> = { maxRetriesPerRequest: 2 };

/** A new client on `target`; `options` override {@link TEST_CLIENT_DEFAULTS}. The caller quits it. */
export function connectRedis(target: RedisTarget, options: RedisOptions = {}): Redis {
  const merged = { ...TEST_CLIENT_DEFAULTS, ...options };
  return typeof target === 'string'
    ? new Redis(target, merged)
    : new Redis({ ...merged, host: target.host, port: target.port });
}

/**
 * A new Redis Cluster client seeded with `nodes`; each node connection starts from
 * {@link TEST_CLIENT_DEFAULTS} and `options.redisOptions`. The caller quits it.
 */
export function connectRedisCluster(
  nodes: ReadonlyArray<{ readonly host: string; readonly port: number }>,
  options: ClusterOptions = {},
): Cluster {
  return new Cluster(
    nodes.map((n) => ({ host: n.host, port: n.port })),
    { ...options, redisOptions: { ...TEST_CLIENT_DEFAULTS, ...options.redisOptions } },
  );
}

/**
 * A client of ioredis 5 (the `ioredis5` npm alias) on a `redis://` URL, for the benchmark's raw
 * baselines and for checks that the library works with either major version. The caller quits it.
 */
export function connectRedis5(url: string, options: Redis5Options = {}): Redis5 {
  return new Redis5(url, { ...TEST_CLIENT_DEFAULTS, ...options } as Redis5Options);
}
