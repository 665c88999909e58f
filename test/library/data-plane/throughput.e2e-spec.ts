import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisUrl, useRedisPrefix, createTestRedis } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { fill, grant, testShard, useReaders, type TestShard } from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

const MESSAGES = 50_000;
const BATCH = 100;
const ROUNDS = 2;

/** The baseline: a bare ioredis loop, XREADGROUP COUNT 100 then one XACK per batch. */
async function rawLoop(connection: Redis, key: string, messages = MESSAGES): Promise<number> {
  await connection.xgroup('CREATE', key, 'raw', '0');
  let handled = 0;
  const started = performance.now();
  while (handled < messages) {
    const reply = (await connection.xreadgroup(
      'GROUP',
      'raw',
      'c',
      'COUNT',
      BATCH,
      'STREAMS',
      key,
      '>',
    )) as Array<[string, Array<[string, string[]]>]> | null;
    const ids: string[] = [];
    for (const [id, fields] of reply?.[0]?.[1] ?? []) {
      JSON.parse(fields[3] as string); // a real consumer decodes its payload too
      ids.push(id);
      handled++;
    }
    if (ids.length > 0) await connection.xack(key, 'raw', ...ids);
  }
  return performance.now() - started;
}

describe('ShardReader throughput (informational, loose bound)', () => {
  const { prefix, redis } = useRedisPrefix('throughput');
  const newReader = useReaders();
  let connection: Redis;
  beforeAll(() => {
    connection = createTestRedis();
  });
  afterAll(() => connection.disconnect());

  async function readerRun(shard: TestShard, messages = MESSAGES, url?: string): Promise<number> {
    await grant(redis(), shard, 'g', 'm');
    let handled = 0;
    let finished = 0;
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      batchSize: BATCH,
      ...(url === undefined ? {} : { url }),
      handle: async () => {
        if (++handled === messages) finished = performance.now();
      },
    });
    const started = performance.now();
    reader.start();
    await waitFor(() => handled === messages, {
      timeoutMs: 100_000,
      intervalMs: 10,
      message: 'all handled',
    });
    await reader.stop();
    return finished - started;
  }

  it(`reader at batch ${BATCH} vs a raw XREADGROUP + XACK loop on ${MESSAGES} messages`, async () => {
    const rate = (ms: number): number => Math.round((MESSAGES / ms) * 1000);
    const raw: number[] = [];
    const ours: number[] = [];
    // round 0 warms both paths up (JIT, script loading); rounds alternate to share the noise
    for (let round = 0; round <= ROUNDS; round++) {
      const rawShard = testShard(prefix, `raw${round}`, 0);
      const ourShard = testShard(prefix, `ours${round}`, 0);
      await fill(redis(), rawShard.key, MESSAGES);
      await fill(redis(), ourShard.key, MESSAGES);
      const rawMs = await rawLoop(connection, rawShard.key);
      const ourMs = await readerRun(ourShard);
      await redis().unlink(rawShard.key, ourShard.key);
      if (round === 0) continue;
      raw.push(rate(rawMs));
      ours.push(rate(ourMs));
    }
    const ratio = Math.max(...ours) / Math.max(...raw);
    console.log(
      `throughput (best of ${ROUNDS}): raw XREADGROUP+XACK ${Math.max(...raw)} msg/s [${raw.join(', ')}], ` +
        `ShardReader ${Math.max(...ours)} msg/s [${ours.join(', ')}], ratio ${ratio.toFixed(2)}`,
    );
    expect(ratio).toBeGreaterThanOrEqual(0.3);
  });

  it('the same through a 1 ms round trip (informational: one round trip per batch vs two)', async () => {
    const messages = 20_000;
    const proxy = await TcpProxy.start(Number(new URL(redisUrl()).port || 6379));
    const slow = createTestRedis({ url: proxy.url });
    try {
      proxy.latencyMs = 0.5;
      const rawShard = testShard(prefix, 'rawnet', 0);
      const ourShard = testShard(prefix, 'oursnet', 0);
      await fill(redis(), rawShard.key, messages);
      await fill(redis(), ourShard.key, messages);
      const rawRate = Math.round((messages / (await rawLoop(slow, rawShard.key, messages))) * 1000);
      const ourRate = Math.round(
        (messages / (await readerRun(ourShard, messages, proxy.url))) * 1000,
      );
      console.log(
        `throughput over a 1 ms RTT: raw ${rawRate} msg/s, ShardReader ${ourRate} msg/s, ratio ${(ourRate / rawRate).toFixed(2)}`,
      );
      expect(ourRate / rawRate).toBeGreaterThanOrEqual(0.3);
    } finally {
      slow.disconnect();
      await proxy.close();
    }
  });
});
