import { afterEach, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import type { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';
import {
  deferred,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
  type TestShard,
} from './data-plane-fixtures.js';

const redisPort = (): number => Number(new URL(redisUrl()).port || 6379);

/** Appends one entry `{ seq }` per key in `keys` (in that order), returns their ids. */
async function append(redis: Redis, shard: TestShard, keys: readonly string[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [seq, key] of keys.entries()) {
    ids.push(
      (await redis.xadd(shard.key, '*', 'key', key, 'payload', JSON.stringify({ seq }))) as string,
    );
  }
  return ids;
}

describe("ShardReader: ordering 'key' counts deliveries only for entries handed to the handler", () => {
  const { prefix, redis } = useRedisPrefix('key-deliveries');
  const newReader = useReaders();
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });

  it('claim passes after connection resets do not count the entries buffered behind their key', async () => {
    // Regression: every claim pass counted a delivery for each own pending entry below the
    // highest handed id, handed or not. Entries buffered behind a slow key (below an entry of
    // another key that was handed) were dead-lettered after maxDeliveries resets, unhandled.
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'm');
    // a0..a4 share key A; b (key B, the highest id) is handed at once
    await append(redis(), shard, ['A', 'A', 'A', 'A', 'A', 'B']);
    const p = await TcpProxy.start(redisPort(), '127.0.0.1', 0);
    proxies.push(p);
    const calls: Array<[seq: number, deliveryCount: number]> = [];
    const releases: Array<() => void> = [];
    const reader: ShardReader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      url: p.url,
      ordering: 'key',
      maxConcurrency: 4,
      maxDeliveries: 2,
      maxAckDelayMs: 20,
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
      handle: async (m) => {
        const seq = seqOf(m.payload);
        calls.push([seq, m.deliveryCount]);
        if (seq === 5) return;
        // every entry of key A runs until the test has reset the connection under it
        const slow = deferred();
        releases.push(slow.resolve);
        await slow.promise;
      },
    });
    reader.start();
    for (let round = 0; round < 4; round++) {
      // a<round> is in flight, the later entries of key A are buffered behind it
      await waitFor(() => releases.length === round + 1 && calls.some(([seq]) => seq === 5), {
        timeoutMs: 10_000,
        intervalMs: 5,
        message: () =>
          `entry a${round} handed; ${JSON.stringify(reader.counters)}, calls ${JSON.stringify(calls)}`,
      });
      const errors = reader.counters.connectionErrors;
      p.cutOnNextRequest();
      // (once 'claiming', the dispatch is closed: the claim pass waits for a<round> to settle)
      await waitFor(
        () => reader.counters.connectionErrors > errors && reader.status === 'claiming',
        {
          timeoutMs: 10_000,
          intervalMs: 1,
          message: () =>
            `reset ${round} noticed (the claim pass waits for a${round}); status ${reader.status}, ${JSON.stringify(reader.counters)}, calls ${JSON.stringify(calls)}`,
        },
      );
      (releases[round] as () => void)();
    }
    await waitFor(() => releases.length === 5, {
      timeoutMs: 10_000,
      intervalMs: 5,
      message: () => `entry a4 handed; ${JSON.stringify(reader.counters)}`,
    });
    (releases[4] as () => void)();
    await waitFor(
      async () =>
        calls.filter(([seq]) => seq < 5).length >= 5 &&
        (await pending(redis(), shard.key, 'g')).length === 0,
      { timeoutMs: 10_000, intervalMs: 10, message: 'every entry of key A handled and acked' },
    );
    expect(reader.counters.deadLettered).toBe(0);
    expect(await redis().xlen(shard.dlq)).toBe(0);
    // key order kept, and each entry of key A reached the handler once, on its first delivery
    expect(calls.filter(([seq]) => seq < 5)).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
      [4, 1],
    ]);
  }, 60_000);

  it('a shard given up in order leaves its unhandled entries uncounted for the next owner', async () => {
    // A revoke while a0 and c0 run (b finished at once, so c0 got the second call): their
    // handlers are stopped because the shard is given up (they throw after stop()); a1 and a2 of
    // key A were never handed. The next owner must see the never-handed ones on the delivery they
    // would have had without the move; a handler call counts (as in shard order: a handler that
    // only ends when aborted is not tried for free at every move).
    const shard = testShard(prefix, 'orders', 2);
    await grant(redis(), shard, 'g', 'A', 1);
    await append(redis(), shard, ['A', 'A', 'A', 'C', 'B']);
    const running = deferred();
    const stopped = deferred();
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      ordering: 'key',
      maxConcurrency: 2,
      maxAckDelayMs: 20,
      handle: async (m) => {
        const seq = seqOf(m.payload);
        if (seq === 4) return; // b, handed with a0 (c0 waits: two calls at most)
        running.resolve();
        await stopped.promise;
        throw new Error('stopped: the shard is given up');
      },
    });
    a.start();
    await running.promise;
    const stopping = a.stop();
    stopped.resolve();
    await stopping;
    await grant(redis(), shard, 'g', 'B', 2);
    const calls: Array<[seq: number, deliveryCount: number]> = [];
    const b = newReader({
      shard,
      group: 'g',
      memberId: 'B',
      ordering: 'key',
      maxAckDelayMs: 20,
      handle: async (m) => void calls.push([seqOf(m.payload), m.deliveryCount]),
    });
    b.start();
    await waitFor(
      async () => calls.length >= 4 && (await pending(redis(), shard.key, 'g')).length === 0,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: () => `B handles the rest: ${JSON.stringify(calls)}`,
      },
    );
    expect(a.counters.failed).toBe(0); // a0's stop is no failure of the message
    expect(calls.filter(([seq]) => seq !== 4).sort((x, y) => x[0] - y[0])).toEqual([
      [0, 2],
      [1, 1],
      [2, 1],
      [3, 2],
    ]);
  }, 60_000);
  it('a failure left in retry backoff by a revoke stays counted for the next owner', async () => {
    // Regression: the handler failed a0 on delivery 1 (a real failure: the shard was not being
    // given up), the revoke came during the retry backoff, and the release took delivery 1
    // back (uncount), so the next owner handed a0 on delivery 1 again. Each revoke in a
    // backoff gave the message a free try: never dead-lettered while the group keeps moving.
    const shard = testShard(prefix, 'orders', 3);
    await grant(redis(), shard, 'g', 'A', 1);
    await append(redis(), shard, ['A', 'A']);
    const failed = deferred();
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      ordering: 'key',
      maxDeliveries: 2,
      maxAckDelayMs: 20,
      retry: { initialDelayMs: 60_000, maxDelayMs: 60_000 },
      handle: (m) => {
        failed.resolve();
        throw new Error(`poison ${String(seqOf(m.payload))}`);
      },
    });
    a.start();
    await failed.promise;
    await waitFor(() => a.counters.failed === 1, { timeoutMs: 10_000, message: 'a0 failed once' });
    await a.stop();
    await grant(redis(), shard, 'g', 'B', 2);
    const calls: Array<[seq: number, deliveryCount: number]> = [];
    const b = newReader({
      shard,
      group: 'g',
      memberId: 'B',
      ordering: 'key',
      maxDeliveries: 2,
      maxAckDelayMs: 20,
      retry: { initialDelayMs: 1 },
      handle: (m) => {
        const seq = seqOf(m.payload);
        calls.push([seq, m.deliveryCount]);
        if (seq === 0) throw new Error('poison 0');
      },
    });
    b.start();
    await waitFor(
      async () => calls.length >= 2 && (await pending(redis(), shard.key, 'g')).length === 0,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: () => `B handles the rest: ${JSON.stringify(calls)}`,
      },
    );
    // a0 was tried once by A: B tries it once more (delivery 2 of 2), then dead-letters it;
    // a1 was never handed: delivery 1
    expect(calls).toEqual([
      [0, 2],
      [1, 1],
    ]);
    expect(await redis().xlen(shard.dlq)).toBe(1);
  }, 60_000);
  it('a handler call ended by the give-up stays counted for the next owner (as in shard order)', async () => {
    // A handler that only ends when its signal aborts (a hang that respects the signal) failed
    // on delivery 1 because the shard was given up. Left uncounted, such a message kept its count
    // across every rebalance and was never dead-lettered; shard order counts the takeover.
    const shard = testShard(prefix, 'orders', 5);
    await grant(redis(), shard, 'g', 'A', 1);
    await append(redis(), shard, ['A', 'A']);
    const running = deferred();
    const hang = deferred<Error>();
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      ordering: 'key',
      maxDeliveries: 2,
      maxAckDelayMs: 20,
      handle: async () => {
        running.resolve();
        throw await hang.promise;
      },
    });
    a.start();
    await running.promise;
    // stop() aborts the shard's signal at once; the handler then throws, as one that listens to
    // its signal would
    const stopping = a.stop();
    hang.resolve(new Error('aborted'));
    await stopping;
    await grant(redis(), shard, 'g', 'B', 2);
    const calls: Array<[seq: number, deliveryCount: number]> = [];
    const b = newReader({
      shard,
      group: 'g',
      memberId: 'B',
      ordering: 'key',
      maxDeliveries: 2,
      maxAckDelayMs: 20,
      handle: (m) => {
        calls.push([seqOf(m.payload), m.deliveryCount]);
      },
    });
    b.start();
    await waitFor(
      async () => calls.length >= 2 && (await pending(redis(), shard.key, 'g')).length === 0,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: () => `B handles the rest: ${JSON.stringify(calls)}`,
      },
    );
    // a0's handler call on delivery 1 counts; a1 was never handed: delivery 1
    expect(calls).toEqual([
      [0, 2],
      [1, 1],
    ]);
    await b.stop();
  }, 60_000);

  it('a buffered entry deleted before the release is still reported missing', async () => {
    // Regression: the release's uncount (XCLAIM … JUSTID) silently dropped a deleted entry from
    // the pending list, so neither it nor the next owner's claim reported it (counters.missing,
    // warning).
    const shard = testShard(prefix, 'orders', 4);
    await grant(redis(), shard, 'g', 'A', 1);
    const [, a1] = await append(redis(), shard, ['A', 'A']);
    const running = deferred();
    const stopped = deferred();
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      ordering: 'key',
      maxAckDelayMs: 20,
      handle: async () => {
        running.resolve();
        await stopped.promise;
        throw new Error('stopped: the shard is given up');
      },
    });
    a.start();
    await running.promise;
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 2, {
      timeoutMs: 10_000,
      message: 'a0 and a1 pending on A',
    });
    expect(await redis().xdel(shard.key, a1 as string)).toBe(1);
    const stopping = a.stop();
    stopped.resolve();
    await stopping;
    await grant(redis(), shard, 'g', 'B', 2);
    const calls: number[] = [];
    const b = newReader({
      shard,
      group: 'g',
      memberId: 'B',
      ordering: 'key',
      maxAckDelayMs: 20,
      handle: async (m) => void calls.push(seqOf(m.payload)),
    });
    b.start();
    await waitFor(
      async () => calls.length >= 1 && (await pending(redis(), shard.key, 'g')).length === 0,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: () => `B handles a0: ${JSON.stringify(calls)}`,
      },
    );
    expect(calls).toEqual([0]);
    // reported once: by the release that found it gone
    expect(a.counters.missing + b.counters.missing).toBe(1);
  }, 60_000);
});
