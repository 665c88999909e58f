import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import type { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { CLAIM_SCRIPT } from '../../../libs/stream-coordinator/src/data-plane/scripts/index.js';
import {
  createReaderConnection,
  createRedisConnection,
  type ReaderRedis,
} from '../../../libs/stream-coordinator/src/redis/index.js';
import {
  fill,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
  type TestReaderOptions,
  type TestShard,
} from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

const redisPort = (): number => Number(new URL(redisUrl()).port || 6379);

describe('ShardReader: network failures', () => {
  const { prefix, redis } = useRedisPrefix('network');
  const newReader = useReaders();
  const proxies: TcpProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((p) => p.close()));
  });
  const proxy = async (port = 0): Promise<TcpProxy> => {
    const started = await TcpProxy.start(redisPort(), '127.0.0.1', port);
    proxies.push(started);
    return started;
  };
  /**
   * A started reader of shard `index` (granted to `m` in group `g`, `prefilled` entries in it)
   * whose connections go through a new proxy; `seen` collects the handled `seq`s in order.
   */
  const proxiedReader = async (
    index: number,
    prefilled: number,
    options: Partial<TestReaderOptions> = {},
  ): Promise<{ shard: TestShard; p: TcpProxy; seen: number[]; reader: ShardReader }> => {
    const shard = testShard(prefix, 'orders', index);
    await grant(redis(), shard, 'g', 'm');
    if (prefilled > 0) await fill(redis(), shard.key, prefilled);
    const p = await proxy();
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      url: p.url,
      handle: async (m) => void seen.push(seqOf(m.payload)),
      ...options,
    });
    reader.start();
    return { shard, p, seen, reader };
  };

  it.each(['direct', 'bundled'] as const)(
    'readerClient %s: a connection that closes between two calls does not fail the next one',
    async (readerClient) => {
      const shard = testShard(prefix, 'orders', readerClient === 'direct' ? 9 : 10);
      await grant(redis(), shard, 'g', 'm');
      const name = `${prefix}-idle-${readerClient}`;
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      let started = false;
      const connections: ReaderRedis[] = [];
      const reader = newReader({
        shard,
        group: 'g',
        memberId: 'm',
        createConnection: () => {
          const connection = createReaderConnection(redisUrl(), {
            readerClient,
            connectionName: name,
          });
          connections.push(connection);
          return connection;
        },
        handle: async () => {
          started = true;
          await held;
        },
      });
      reader.start();
      await fill(redis(), shard.key, 1);
      await waitFor(() => started, {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'handler running',
      });
      // nothing is in flight on the reader's connection while its handler runs: close it
      const line = String(await redis().client('LIST'))
        .split('\n')
        .find((l) => l.includes(` name=${name} `));
      const id = /^id=(\d+)/.exec(line ?? '')?.[1];
      expect(id).toBeDefined();
      const first = connections[0] as ReaderRedis;
      const closed = new Promise((resolve) => first.once('close', resolve));
      await redis().call('CLIENT', 'KILL', 'ID', id as string);
      // the reader's side has seen it close (ioredis reconnects; a direct connection has ended)
      await closed;
      release();
      await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'the handled entry acked',
      });
      await reader.stop();
      expect(reader.counters.connectionErrors).toBe(0);
    },
  );

  it('watchdog: a black-holed connection in a blocking read is noticed within blockMs + grace and replaced', async () => {
    const { shard, p, seen, reader } = await proxiedReader(0, 3, {
      blockMs: 300,
      watchdogGraceMs: 300,
    });
    await waitFor(() => seen.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'first entries handled',
    });
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
    expect(reader.counters.connectionsCreated).toBe(1);
    p.pause();
    const paused = performance.now();
    await waitFor(() => reader.counters.watchdogFired >= 1, {
      timeoutMs: 5000,
      intervalMs: 10,
      message: 'watchdog fired',
    });
    expect(performance.now() - paused).toBeLessThan(300 + 300 + 400);
    await fill(redis(), shard.key, 2, 3);
    expect(reader.isStalled()).toBe(false);
    p.resume();
    await waitFor(() => seen.length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entries after the blip handled',
    });
    expect(seen).toEqual([0, 1, 2, 3, 4]);
    expect(reader.counters.connectionsCreated).toBeGreaterThanOrEqual(2);
    await waitFor(() => reader.status === 'reading', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'reading again',
    });
  });

  it('a reader connection does not send a read again whose reply was lost with the connection', async () => {
    // Regression: ioredis resends unanswered commands after a reconnect by default. A resent
    // `XREADGROUP … >` read the entries after the ones the lost reply carried (those stayed
    // pending, unseen), so the reader handled later entries first (seen in CI: 1150–1199 handled
    // before 1100–1149). Reader connections must not resend; the reader's watchdog ends the
    // unanswered call and its claim phase takes the pending entries back in order.
    const key = `${prefix}:lost-reply`;
    await redis().xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    const p = await proxy();
    const reader = createRedisConnection(p.url, 'reader');
    try {
      await reader.ping();
      // never answered (its reply is lost below); not awaited
      reader
        .xreadgroup('GROUP', 'g', 'c', 'COUNT', 10, 'BLOCK', 30_000, 'STREAMS', key, '>')
        .catch(() => undefined);
      await waitFor(async () => String(await redis().client('LIST')).includes('cmd=xreadgroup'), {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'the blocked read',
      });
      p.pause();
      await redis().xadd(key, '*', 'n', '1');
      await waitFor(async () => ((await redis().xpending(key, 'g')) as unknown[])[0] === 1, {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'the entry delivered to the blocked read',
      });
      const ready = new Promise((resolve) => reader.once('ready', resolve));
      p.cutAll();
      p.resume();
      // a second entry is there before the client reconnects: a resent read would take it
      await redis().xadd(key, '*', 'n', '2');
      await ready;
      // commands on one connection are answered in order: after this PING, a resent read
      // would have been served already
      await reader.ping();
      expect(((await redis().xpending(key, 'g')) as unknown[])[0]).toBe(1);
    } finally {
      reader.disconnect();
    }
  });

  it('a connection reset during a blocking read is noticed at once, not at the watchdog', async () => {
    // ioredis drops the commands a closed connection left unanswered when it reconnects (reader
    // connections never resend them), so their promises never settle: without listening to the
    // connection's `close`, the reader sat in its dead read until blockMs + grace (10 s here).
    const { shard, p, seen, reader } = await proxiedReader(3, 2, {
      blockMs: 5000,
      watchdogGraceMs: 5000,
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 50 },
    });
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'first entries handled',
    });
    await waitFor(async () => String(await redis().client('LIST')).includes('cmd=xreadgroup'), {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the blocked read',
    });
    p.cutAll();
    const cut = performance.now();
    await fill(redis(), shard.key, 2, 2);
    await waitFor(() => seen.length === 4, {
      timeoutMs: 4000,
      intervalMs: 10,
      message: 'entries added after the reset handled',
    });
    expect(performance.now() - cut).toBeLessThan(3000);
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(reader.counters.watchdogFired).toBe(0);
    expect(reader.counters.connectionErrors).toBeGreaterThanOrEqual(1);
  });

  it('connections reset again and again: the reader keeps the shard and handles every entry once, in order', async () => {
    const { shard, p, seen, reader } = await proxiedReader(1, 0, {
      batchSize: 50,
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 50 },
    });
    const total = 2000;
    let cuts = 0;
    const cutter = setInterval(() => {
      cuts++;
      p.cutAll();
    }, 25);
    try {
      // every chunk is written, then the harness waits for the next reconnect: resets always
      // land between (and during) the reads of the chunks, however fast the reader is
      for (let i = 0; i < total; i += 100) {
        const accepted = p.accepted;
        await fill(redis(), shard.key, 100, i);
        await waitFor(() => p.accepted > accepted, {
          timeoutMs: 10_000,
          intervalMs: 10,
          message: 'a reconnect after the chunk',
        });
      }
      await waitFor(() => new Set(seen).size === total, {
        timeoutMs: 60_000,
        intervalMs: 10,
        message: 'all handled',
      });
    } finally {
      clearInterval(cutter);
    }
    expect(cuts).toBeGreaterThan(5);
    // the reader's connection was reset and re-established many times (ioredis resends an
    // unanswered command after reconnecting; a resent read shows up as orphans, reclaimed)
    expect(p.accepted).toBeGreaterThan(5);
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all acked',
    });
    expect(['claiming', 'reading']).toContain(reader.status);
  });

  it('resets within one batch do not count as deliveries of the entries the handler has not seen', async () => {
    // Regression: each reset sent the reader back to its claim phase, whose XAUTOCLAIM raised the
    // delivery count of its own unhandled tail; after maxDeliveries resets in one batch the
    // tail was dead-lettered without ever reaching the handler.
    let p: TcpProxy | undefined;
    const cutAfter = new Set([0, 1, 2, 3, 4]);
    const counts = new Map<number, number[]>();
    const { shard, seen, reader } = await proxiedReader(5, 10, {
      batchSize: 10,
      maxDeliveries: 3,
      // every handled entry is acknowledged at once: the reset lands on that ack, mid-batch
      maxAckDelayMs: 0,
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
      handle: async (m) => {
        const seq = seqOf(m.payload);
        seen.push(seq);
        counts.set(seq, [...(counts.get(seq) ?? []), m.deliveryCount]);
        if (cutAfter.delete(seq)) p?.cutOnNextRequest();
      },
    }).then((started) => {
      p = started.p;
      return started;
    });
    await waitFor(
      async () =>
        new Set(seen).size + (await redis().xlen(shard.dlq)) >= 10 &&
        (await pending(redis(), shard.key, 'g')).length === 0,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'every entry handled (or dead-lettered) and acknowledged',
      },
    );
    expect(cutAfter.size).toBe(0);
    expect(reader.counters.connectionErrors).toBeGreaterThanOrEqual(5);
    expect(reader.counters.deadLettered).toBe(0);
    expect(await redis().xlen(shard.dlq)).toBe(0);
    expect([...new Set(seen)].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    // nothing the handler had not seen was counted as delivered again
    for (const [seq, seenCounts] of counts) expect(seenCounts, `seq ${seq}`).toEqual([1]);
  });

  it('a takeover claim whose reply is lost is not counted twice', async () => {
    // The claim script ran (another member's entries moved here, counted once) but its reply
    // was lost; the claim that follows must not count the takeover again.
    const shard = testShard(prefix, 'orders', 7);
    await grant(redis(), shard, 'g', 'm');
    await redis().xgroup('CREATE', shard.key, 'g', '0', 'MKSTREAM');
    await fill(redis(), shard.key, 3);
    await redis().xreadgroup('GROUP', 'g', 'prev', 'COUNT', 10, 'STREAMS', shard.key, '>');
    const p = await proxy();
    const claimSha = createHash('sha1').update(CLAIM_SCRIPT.lua).digest('hex');
    // (ioredis sends the script itself on a connection's first call, its sha after)
    p.cutReplyTo((request) => request.includes(CLAIM_SCRIPT.lua) || request.includes(claimSha));
    const counts: Array<[number, number]> = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      url: p.url,
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
      handle: async (m) => void counts.push([seqOf(m.payload), m.deliveryCount]),
    });
    reader.start();
    await waitFor(
      async () => counts.length >= 3 && (await pending(redis(), shard.key, 'g')).length === 0,
      { timeoutMs: 10_000, intervalMs: 10, message: 'the three entries handled and acked' },
    );
    expect(reader.counters.connectionErrors).toBeGreaterThanOrEqual(1);
    expect(counts).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
    ]);
  });

  it('a reset while a failed entry is being retried still counts the try the handler made', async () => {
    let p: TcpProxy | undefined;
    const counts: number[] = [];
    const { shard, reader } = await proxiedReader(6, 1, {
      maxDeliveries: 5,
      retry: { initialDelayMs: 5, maxDelayMs: 5 },
      reconnectBackoff: { initialDelayMs: 5, maxDelayMs: 20 },
      handle: async (m) => {
        counts.push(m.deliveryCount);
        if (counts.length === 1) {
          // the redelivery after this failure is reset on its way to Redis
          p?.cutOnNextRequest();
          throw new Error('first try fails');
        }
      },
    }).then((started) => {
      p = started.p;
      return started;
    });
    await waitFor(
      async () => counts.length >= 2 && (await pending(redis(), shard.key, 'g')).length === 0,
      { timeoutMs: 10_000, intervalMs: 10, message: 'the entry handled on its second delivery' },
    );
    expect(reader.counters.connectionErrors).toBeGreaterThanOrEqual(1);
    expect(counts).toEqual([1, 2]);
  });

  it.each(['direct', 'bundled'] as const)(
    'Redis unreachable for a while: the reader retries, then resumes on a new connection (readerClient %s)',
    async (readerClient) => {
      const shard = testShard(prefix, 'orders', readerClient === 'direct' ? 2 : 8);
      await grant(redis(), shard, 'g', 'm');
      const first = await proxy();
      const port = first.port;
      const seen: number[] = [];
      const connections: ReaderRedis[] = [];
      const reader = newReader({
        shard,
        group: 'g',
        memberId: 'm',
        url: first.url,
        blockMs: 200,
        reconnectBackoff: { initialDelayMs: 20, maxDelayMs: 100 },
        createConnection: () => {
          const connection = createReaderConnection(first.url, { readerClient });
          connections.push(connection);
          return connection;
        },
        handle: async (m) => void seen.push(seqOf(m.payload)),
      });
      reader.start();
      await waitFor(() => reader.status === 'reading', {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'reading',
      });
      await first.close();
      // enough failed calls for the reader to replace its connection several times
      await waitFor(() => reader.counters.connectionErrors >= 8, {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'errors observed',
      });
      await fill(redis(), shard.key, 3);
      await proxy(port);
      await waitFor(() => seen.length === 3, {
        timeoutMs: 20_000,
        intervalMs: 10,
        message: 'handled after Redis came back',
      });
      expect(seen).toEqual([0, 1, 2]);
      // every connection the reader gave up on, and its last one, ended: none was stranded in
      // `reconnecting` (ioredis does that to a connection disconnected between two sockets)
      await reader.stop();
      await waitFor(() => connections.every((c) => c.status === 'end'), {
        timeoutMs: 5000,
        intervalMs: 10,
        message: `every reader connection ended (${connections.map((c) => c.status).join(', ')})`,
      });
    },
  );
});
