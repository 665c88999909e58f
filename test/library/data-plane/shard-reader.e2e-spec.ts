import { describe, expect, it } from 'vitest';
import type { StreamShardMessage } from '../../../libs/stream-coordinator/src/interfaces/index.js';
import { useRedisPrefix } from '../../support/redis.js';
import {
  consumers,
  deferred,
  fill,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
} from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

describe('ShardReader: ordered handling, acks, stop', () => {
  const { prefix, redis } = useRedisPrefix('reader');
  const newReader = useReaders();

  it('handles the entries of a shard one at a time, in order, across batches, and acks them', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis(), shard, 'g1', 'm1');
    await fill(redis(), shard.key, 250);
    const seen: number[] = [];
    const handledIds = new Set<string>();
    const acked: string[] = [];
    let ackedEarly = 0;
    let ackedTwice = 0;
    let running = 0;
    let overlap = false;
    const reader = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      batchSize: 40,
      handle: async (message) => {
        running++;
        if (running > 1) overlap = true;
        if (message.deliveryCount !== 1) throw new Error('unexpected redelivery');
        await new Promise((resolve) => setTimeout(resolve, seen.length % 7 === 0 ? 2 : 0));
        seen.push(seqOf(message.payload));
        handledIds.add(message.id);
        running--;
      },
      hooks: {
        acked: (ids, sentAt) => {
          for (const id of ids) {
            if (!handledIds.has(id)) ackedEarly++;
            if (acked.includes(id)) ackedTwice++;
          }
          if (!(sentAt <= performance.now())) ackedEarly++;
          acked.push(...ids);
        },
      },
    });
    reader.start();
    await waitFor(() => seen.length === 250, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: '250 handled',
    });
    // more entries while the reader waits in its blocking read
    await fill(redis(), shard.key, 30, 250);
    await waitFor(() => seen.length === 280, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: '280 handled',
    });
    expect(seen).toEqual(Array.from({ length: 280 }, (_, i) => i));
    expect(overlap).toBe(false);
    await waitFor(async () => (await pending(redis(), shard.key, 'g1')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all acked',
    });
    // the acked hook reported every entry once, in order, each after its handler resolved
    await waitFor(() => acked.length === 280, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'every ack reported',
    });
    expect(acked).toEqual([...handledIds]);
    expect(ackedEarly).toBe(0);
    expect(ackedTwice).toBe(0);
    expect(reader.status).toBe('reading');
    expect(reader.counters.handled).toBe(280);
  });

  it('exposes id, stream, shard, key, payload, headers, deliveryCount and publishedAt', async () => {
    const shard = testShard(prefix, 'orders', 2);
    await grant(redis(), shard, 'g1', 'm1');
    const id = await redis().xadd(
      shard.key,
      '*',
      'key',
      'cust-9',
      'payload',
      '{"a":1}',
      'headers',
      '{"h":"v"}',
    );
    const got: StreamShardMessage[] = [];
    const reader = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      handle: async (m) => void got.push(m),
    });
    reader.start();
    await waitFor(() => got.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'one message',
    });
    const message = got[0] as StreamShardMessage;
    expect(message).toMatchObject({
      id,
      stream: 'orders',
      shard: 2,
      key: 'cust-9',
      payload: { a: 1 },
      headers: { h: 'v' },
      deliveryCount: 1,
    });
    expect(message.publishedAt.getTime()).toBe(Number(id?.split('-')[0]));
  });

  it('acks an entry only after its handler resolved', async () => {
    const shard = testShard(prefix, 'orders', 3);
    await grant(redis(), shard, 'g1', 'm1');
    const [first] = await fill(redis(), shard.key, 3);
    const gate = deferred();
    const handled: number[] = [];
    const reader = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      handle: async (message) => {
        if (seqOf(message.payload) === 0) await gate.promise;
        handled.push(seqOf(message.payload));
      },
    });
    reader.start();
    await waitFor(() => reader.handlerRunningSince !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'handler running',
    });
    const blocked = await pending(redis(), shard.key, 'g1');
    expect(blocked.map((p) => p[0])).toContain(first);
    expect(blocked.every((p) => p[1] === 'm1')).toBe(true);
    expect(handled).toEqual([]);
    gate.resolve();
    await waitFor(() => handled.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all handled',
    });
    await waitFor(async () => (await pending(redis(), shard.key, 'g1')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all acked',
    });
  });

  it('stop() waits for the in-flight handler, acks it, and leaves the rest pending', async () => {
    const shard = testShard(prefix, 'orders', 4);
    await grant(redis(), shard, 'g1', 'm1');
    const ids = await fill(redis(), shard.key, 5);
    const gate = deferred();
    const handled: number[] = [];
    const reader = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      handle: async (message) => {
        if (seqOf(message.payload) === 1) await gate.promise;
        handled.push(seqOf(message.payload));
      },
    });
    reader.start();
    await waitFor(() => handled.length === 1 && reader.handlerRunningSince !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'second handler running',
    });
    let stopped = false;
    const stopping = reader.stop().then(() => {
      stopped = true;
    });
    expect(reader.status).toBe('stopping');
    // the handler still runs: stop() must not resolve (bounded negative check)
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(reader.status).toBe('stopped');
    expect(handled).toEqual([0, 1]);
    const left = (await pending(redis(), shard.key, 'g1')).map((p) => p[0]);
    expect(left).toEqual(ids.slice(2));
  });

  it('stop() is immediate while the reader is blocked in its blocking read', async () => {
    const shard = testShard(prefix, 'orders', 5);
    await grant(redis(), shard, 'g1', 'm1');
    await fill(redis(), shard.key, 2);
    let handled = 0;
    const reader = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      blockMs: 20_000,
      handle: async () => void handled++,
    });
    reader.start();
    await waitFor(() => handled === 2, { timeoutMs: 10_000, intervalMs: 10, message: 'handled' });
    await waitFor(async () => (await pending(redis(), shard.key, 'g1')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
    const started = performance.now();
    await reader.stop();
    const took = performance.now() - started;
    expect(took).toBeLessThan(300);
    expect(reader.status).toBe('stopped');
    await reader.stop(); // idempotent
  });

  it('stop() removes the member from the shard’s consumer group when nothing is pending on it, and never when something is', async () => {
    const shard = testShard(prefix, 'orders', 6);
    await grant(redis(), shard, 'g1', 'm1');
    await fill(redis(), shard.key, 3);
    await redis().xgroup('CREATE', shard.key, 'g1', '0');
    await redis().xgroup('CREATECONSUMER', shard.key, 'g1', 'other'); // not this member's
    let handled = 0;
    const done = newReader({
      shard,
      group: 'g1',
      memberId: 'm1',
      handle: async () => void handled++,
    });
    done.start();
    await waitFor(() => handled === 3, { timeoutMs: 10_000, intervalMs: 10, message: 'handled' });
    expect((await consumers(redis(), shard.key, 'g1')).map(([name]) => name).sort()).toEqual([
      'm1',
      'other',
    ]);
    await done.stop();
    expect(await consumers(redis(), shard.key, 'g1')).toEqual([['other', 0]]);

    // entries left pending at stop (the rest of a batch) keep the consumer that holds them
    await grant(redis(), shard, 'g1', 'm2', 2);
    const ids = await fill(redis(), shard.key, 3, 3);
    const gate = deferred();
    const stopping = newReader({
      shard,
      group: 'g1',
      memberId: 'm2',
      handle: async () => {
        await gate.promise;
      },
    });
    stopping.start();
    await waitFor(() => stopping.handlerRunningSince !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'first handler running',
    });
    const stopped = stopping.stop();
    gate.resolve();
    await stopped;
    expect((await pending(redis(), shard.key, 'g1')).map((p) => [p[0], p[1]])).toEqual(
      ids.slice(1).map((id) => [id, 'm2']),
    );
    expect(new Map(await consumers(redis(), shard.key, 'g1')).get('m2')).toBe(2);
  });
});
