import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import {
  CompiledRouting,
  RoutingCache,
  StreamPublisher,
} from '../../../libs/stream-coordinator/src/producer/index.js';
import {
  KeySpace,
  routingFunctionFor,
  shardGateKey,
  shardMetaKey,
  type StreamRouting,
} from '../../../libs/stream-coordinator/src/protocol/index.js';
import {
  createRedisConnection,
  type RedisConnection,
} from '../../../libs/stream-coordinator/src/redis/index.js';
import { startRedisCluster, type RedisClusterHandle } from '../../support/redis-cluster.js';
import { grant, seqOf, type TestShard } from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

describe('data plane on Redis Cluster (same-slot scripts, shards spread over nodes)', () => {
  let cluster: RedisClusterHandle;
  let commands: RedisConnection;
  const keys = new KeySpace('rsc-cluster');
  const shardIds = [0, 1, 2, 3, 4, 5];
  const routing: StreamRouting = {
    stream: 'orders',
    routingEpoch: 1,
    shards: shardIds.map((id) => ({ id, key: keys.shardKey('orders', id) })),
    deadLetterKey: keys.deadLetterKey('orders'),
    routing: routingFunctionFor(shardIds),
    resharding: null,
  };
  const readers: ShardReader[] = [];
  const testShardOf = (shard: { id: number; key: string }): TestShard => ({
    stream: 'orders',
    shard: shard.id,
    key: shard.key,
    meta: shardMetaKey(shard.key),
    dlq: routing.deadLetterKey,
  });

  beforeAll(async () => {
    cluster = await startRedisCluster();
    commands = createRedisConnection(cluster.url, 'command');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(readers.map((r) => r.stop()));
    commands?.disconnect();
    await cluster?.stop();
  });

  it('publishes through the fenced write script and reads every shard with fenced scripts', async () => {
    const owners = new Set(
      (await Promise.all(routing.shards.map((s) => cluster.ownerOf(s.key)))).map((n) => n.port),
    );
    expect(owners.size).toBeGreaterThan(1); // the shards really live on different nodes
    for (const shard of routing.shards) {
      await commands.hset(shardMetaKey(shard.key), 'state', 'open');
      // the coordinator's fence script: token + read gate (same slot, on the shard's node)
      await grant(commands, testShardOf(shard), 'g', 'm');
    }
    const publisher = new StreamPublisher({
      connection: commands,
      routing: new RoutingCache({ fetchRouting: () => Promise.resolve(routing) }),
    });
    await publisher.publishBatch(
      'orders',
      Array.from({ length: 120 }, (_, seq) => ({ key: `k${seq % 12}`, payload: { seq } })),
    );
    for (let seq = 120; seq < 130; seq++)
      await publisher.publish('orders', `k${seq % 12}`, { seq });

    const seen = new Map<string, number[]>();
    let failedOnce = false;
    for (const shard of routing.shards) {
      const reader = new ShardReader({
        createConnection: () => createRedisConnection(cluster.url, 'reader'),
        group: 'g',
        memberId: 'm',
        stream: 'orders',
        shard: shard.id,
        key: shard.key,
        deadLetterKey: routing.deadLetterKey,
        blockMs: 300,
        maxDeliveries: 2,
        retry: { initialDelayMs: 5 },
        handle: async (message) => {
          if (seqOf(message.payload) === 7 && !failedOnce) {
            failedOnce = true;
            throw new Error('once');
          }
          if (seqOf(message.payload) === 8) throw new Error('always');
          seen.set(message.key, [...(seen.get(message.key) ?? []), seqOf(message.payload)]);
        },
      });
      readers.push(reader);
      reader.start();
    }
    await waitFor(() => [...seen.values()].reduce((n, s) => n + s.length, 0) === 129, {
      timeoutMs: 30_000,
      intervalMs: 10,
      message: '129 handled',
    });
    for (const seqs of seen.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    // the poison message went to the dead-letter stream (another slot) and was acked
    await waitFor(async () => (await commands.xlen(routing.deadLetterKey)) === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'dead letter',
    });
    // moving a fence stops that shard's reader (its gate, not in the script's KEYS but in the
    // same slot, is deleted on the shard's node)
    const moved = routing.shards[0] as { id: number; key: string };
    await grant(commands, testShardOf(moved), 'g', 'other', 2);
    await waitFor(() => readers[0]?.status === 'lost', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'reader of shard 0 lost',
    });
    expect(readers[0]?.lostReason?.currentOwner).toBe('2:other');
    expect(await commands.exists(shardGateKey(moved.key, 'g', 'm'))).toBe(0);
    expect(await commands.exists(shardGateKey(moved.key, 'g', 'other'))).toBe(1);
    expect(readers.slice(1).every((r) => r.status === 'reading')).toBe(true);
  });

  it('a reader keeps going when its shard’s slot migrates to another node', async () => {
    const shard = routing.shards[1] as { id: number; key: string };
    const reader = readers[1] as ShardReader;
    const before = reader.counters.handled;
    const migration = await cluster.migrateKeySlot(shard.key);
    expect(migration.from.port).not.toBe(migration.to.port);
    const publisher = new StreamPublisher({
      connection: commands,
      routing: new RoutingCache({ fetchRouting: () => Promise.resolve(routing) }),
    });
    const table = new CompiledRouting(routing);
    let published = 0;
    for (let seq = 1000; published < 5; seq++) {
      const key = `m${seq}`;
      if (table.shardFor(key) !== shard.id) continue;
      await publisher.publish('orders', key, { seq });
      published++;
    }
    await waitFor(() => reader.counters.handled === before + 5, {
      timeoutMs: 30_000,
      intervalMs: 10,
      message: 'handled after the migration',
    });
    expect(reader.status).toBe('reading');
  });
});
