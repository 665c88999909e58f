import type { Redis } from 'ioredis';
import type { ClusterNode } from '../../support/redis-cluster.js';
import { connectRedis } from '../../support/redis-client.js';

/** A standalone client of one cluster node (for per-node checks: CLIENT LIST, INFO, KEYSLOT). */
export function nodeClient(node: ClusterNode): Redis {
  const client = connectRedis(node, { maxRetriesPerRequest: 1 });
  client.on('error', () => {
    // surfaced by the failing command instead
  });
  return client;
}

/** Connections of `node` whose client name is `name` (CLIENT LIST). */
export async function namedConnections(client: Redis, name: string): Promise<number> {
  const list = String(await client.call('CLIENT', 'LIST'));
  return list.split('\n').filter((line) => new RegExp(`(^| )name=${name}( |$)`).test(line)).length;
}

/** The node's `INFO errorstats` as `error prefix → count` (e.g. `CROSSSLOT → 2`). */
export async function errorStats(client: Redis): Promise<Map<string, number>> {
  const info = String(await client.info('errorstats'));
  const out = new Map<string, number>();
  for (const match of info.matchAll(/^errorstat_([^:]+):count=(\d+)/gm)) {
    out.set(match[1] as string, Number(match[2]));
  }
  return out;
}

/** The hash slot of `key` (CLUSTER KEYSLOT on any node). */
export async function keySlot(client: Redis, key: string): Promise<number> {
  return Number(await client.call('CLUSTER', 'KEYSLOT', key));
}
