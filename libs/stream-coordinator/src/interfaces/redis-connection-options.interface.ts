import type { ClusterOptions, RedisOptions } from 'ioredis';

/**
 * A node of a Redis Cluster.
 *
 * @publicApi
 */
export interface RedisClusterNode {
  host: string;
  port: number;
}

/**
 * Where the data plane lives:
 * - a URL (`redis://…`, `rediss://…`), or `redis+cluster://h1:p1,h2:p2` for a Redis Cluster;
 * - ioredis options for a standalone server;
 * - `{ cluster: nodes, clusterOptions? }` for a Redis Cluster (nodes as objects or `host:port`).
 *
 * @publicApi
 */
export type RedisConnectionOptions =
  | string
  | RedisOptions
  | { cluster: Array<RedisClusterNode | string>; clusterOptions?: ClusterOptions };
