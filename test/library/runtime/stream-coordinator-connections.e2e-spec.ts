import { afterEach, describe, expect, it } from 'vitest';
import { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import type { ResolvedStreamCoordinatorOptions } from '../../../libs/stream-coordinator/src/interfaces/resolved-stream-coordinator-options.interface.js';
import type { ReaderRedis } from '../../../libs/stream-coordinator/src/redis/index.js';
import { StreamCoordinatorConnections } from '../../../libs/stream-coordinator/src/runtime/stream-coordinator-connections.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { grant, testShard } from '../data-plane/data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

const redisPort = (): number => Number(new URL(redisUrl()).port || 6379);
const silent = { log: () => undefined, warn: () => undefined, error: () => undefined };

describe('StreamCoordinatorConnections', () => {
  const { prefix, redis } = useRedisPrefix('connections');
  const cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const step of cleanup.splice(0).reverse()) await step();
  });

  it.each([
    ['bundled', 'reconnecting'],
    ['direct', 'end'],
  ] as const)(
    'readerClient %s: forgets a reader connection its reader closed while Redis was away (one per shard per outage)',
    async (readerClient, down) => {
      const warnings: string[] = [];
      const proxy = await TcpProxy.start(redisPort());
      cleanup.push(() => proxy.close());
      const connections = new StreamCoordinatorConnections({
        redis: proxy.url,
        logger: { ...silent, warn: (message: string) => void warnings.push(message) },
        readerClient,
      } as unknown as ResolvedStreamCoordinatorOptions);
      cleanup.push(() => connections.onApplicationShutdown());
      const shard = testShard(prefix, 'orders', readerClient === 'direct' ? 1 : 0);
      await grant(redis(), shard, 'g', 'm');
      const created: ReaderRedis[] = [];
      const reader = new ShardReader({
        createConnection: () => {
          const connection = connections.reader();
          created.push(connection);
          return connection;
        },
        group: 'g',
        memberId: 'm',
        stream: shard.stream,
        shard: shard.shard,
        key: shard.key,
        deadLetterKey: shard.dlq,
        blockMs: 200,
        reconnectBackoff: { initialDelayMs: 10, maxDelayMs: 50 },
        handle: async () => undefined,
      });
      cleanup.push(() => reader.stop());
      reader.start();
      await waitFor(() => reader.status === 'reading', {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'reading',
      });
      expect(connections.trackedConnections).toBe(1);
      // Redis goes away: an ioredis reader connection is left reconnecting, a direct one ends (and
      // the reader opens new ones that are refused), then the reader stops
      await proxy.close();
      await waitFor(
        () => reader.counters.connectionErrors >= 1 && created.at(-1)?.status === down,
        { timeoutMs: 10_000, intervalMs: 10, message: `the reader connection ${down}` },
      );
      // several failed calls (a direct reader opens a new connection for each): one warning for
      // the outage, not one per connection
      await waitFor(() => reader.counters.connectionErrors >= 3, {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'three failed calls',
      });
      if (readerClient === 'direct') expect(created.length).toBeGreaterThanOrEqual(3);
      expect(warnings.filter((w) => w.includes('Redis reader connection error'))).toHaveLength(1);
      await reader.stop();
      // ioredis cannot end a connection disconnected while reconnecting (it stays `reconnecting`,
      // inert: no socket, no timer); the application must not keep it until shutdown. (A direct
      // connection ends when its socket has closed, just after the stop.)
      await waitFor(
        () =>
          created.every((c) => c.status === 'end' || c.status === 'reconnecting') &&
          connections.trackedConnections === 0,
        { timeoutMs: 5000, intervalMs: 10, message: 'every reader connection ended and forgotten' },
      );
    },
  );
});
