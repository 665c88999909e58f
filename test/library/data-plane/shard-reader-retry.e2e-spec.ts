import { describe, expect, it } from 'vitest';
import { useRedisPrefix } from '../../support/redis.js';
import { fill, grant, pending, seqOf, testShard, useReaders } from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

/** Dead-letter entries as field maps. */
async function deadLetters(
  redis: ReturnType<ReturnType<typeof useRedisPrefix>['redis']>,
  key: string,
): Promise<Array<Record<string, string>>> {
  const entries = await redis.xrange(key, '-', '+');
  return entries.map(([, fields]) => {
    const record: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2)
      record[fields[i] as string] = fields[i + 1] as string;
    return record;
  });
}

describe('ShardReader: retries, dead-letter, poison messages', () => {
  const { prefix, redis } = useRedisPrefix('retry');
  const newReader = useReaders();

  it('retries a failing message with backoff, dead-letters it with the error and the original, acks it, then moves on', async () => {
    const shard = testShard(prefix, 'pay0', 0);
    await grant(redis(), shard, 'g', 'm');
    const [, poisonId] = await Promise.all([
      redis().xadd(shard.key, '*', 'key', 'ok', 'payload', '{"seq":0}'),
      redis().xadd(
        shard.key,
        '*',
        'key',
        'bad',
        'payload',
        '{"seq":1}',
        'headers',
        '{"trace":"t1"}',
      ),
      redis().xadd(shard.key, '*', 'key', 'ok', 'payload', '{"seq":2}'),
    ]);
    const calls: Array<{ seq: number; delivery: number; at: number }> = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      maxDeliveries: 3,
      retry: { initialDelayMs: 40, multiplier: 2, maxDelayMs: 1000 },
      // full jitter draws each delay from [0, ceiling]: this source draws (almost) the ceiling
      random: () => 0.999,
      handle: async (message) => {
        calls.push({
          seq: seqOf(message.payload),
          delivery: message.deliveryCount,
          at: performance.now(),
        });
        if (message.key === 'bad') throw new Error('card declined');
      },
    });
    reader.start();
    await waitFor(() => calls.length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'five handler calls',
    });
    expect(calls.map((c) => [c.seq, c.delivery])).toEqual([
      [0, 1],
      [1, 1],
      [1, 2],
      [1, 3],
      [2, 1],
    ]);
    const gap1 = (calls[2]?.at ?? 0) - (calls[1]?.at ?? 0);
    const gap2 = (calls[3]?.at ?? 0) - (calls[2]?.at ?? 0);
    expect(gap1).toBeGreaterThanOrEqual(38);
    expect(gap2).toBeGreaterThanOrEqual(78);
    const [letter, ...others] = await deadLetters(redis(), shard.dlq);
    expect(others).toEqual([]);
    expect(letter).toMatchObject({
      key: 'bad',
      payload: '{"seq":1}',
      headers: '{"trace":"t1"}',
      stream: 'pay0',
      shard: '0',
      group: 'g',
      id: poisonId,
      reason: 'max-deliveries',
      error: 'card declined',
      deliveryCount: '3',
      memberId: 'm',
    });
    expect(letter?.stack).toContain('card declined');
    expect(Number.isNaN(Date.parse(letter?.failedAt ?? ''))).toBe(false);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all acked',
    });
    expect(reader.counters).toMatchObject({ handled: 2, failed: 3, retried: 2, deadLettered: 1 });
  });

  it('a message that succeeds on a retry is acked and not dead-lettered', async () => {
    const shard = testShard(prefix, 'pay1', 1);
    await grant(redis(), shard, 'g', 'm');
    await fill(redis(), shard.key, 2);
    const deliveries: Array<[number, number]> = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      retry: { initialDelayMs: 5 },
      handle: async (message) => {
        deliveries.push([seqOf(message.payload), message.deliveryCount]);
        if (message.deliveryCount === 1 && seqOf(message.payload) === 0) throw new Error('flaky');
      },
    });
    reader.start();
    await waitFor(() => deliveries.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'three calls',
    });
    expect(deliveries).toEqual([
      [0, 1],
      [0, 2],
      [1, 1],
    ]);
    expect(await redis().exists(shard.dlq)).toBe(0);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('dead-letters an undecodable message at once (no key or bad headers: without calling the handler; a bad payload: when the handler reads it)', async () => {
    const shard = testShard(prefix, 'pay2', 2);
    await grant(redis(), shard, 'g', 'm');
    await redis().xadd(shard.key, '*', 'key', 'k', 'payload', 'not json{');
    await redis().xadd(shard.key, '*', 'payload', '{}');
    await redis().xadd(shard.key, '*', 'key', 'k', 'payload', '{}', 'headers', '{"n":1}');
    await redis().xadd(shard.key, '*', 'key', 'k', 'payload', '{"seq":7}');
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => seen.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the good one handled',
    });
    expect(seen).toEqual([7]);
    await waitFor(async () => (await redis().xlen(shard.dlq)) === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'three dead letters',
    });
    const letters = await deadLetters(redis(), shard.dlq);
    expect(letters.map((l) => [l.reason, l.deliveryCount])).toEqual([
      ['undecodable', '1'],
      ['undecodable', '1'],
      ['undecodable', '1'],
    ]);
    expect(letters[0]?.error).toContain('serializer rejected the payload');
    expect(letters[0]?.payload).toBe('not json{');
    expect(letters[1]?.error).toContain('no "key" field');
    expect(letters[2]?.error).toContain('non-string value');
    expect(reader.counters.failed).toBe(0);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('dead-letters a message whose payload read failed even when the handler caught the error; a handler that never reads the payload is not stopped by it', async () => {
    const shard = testShard(prefix, 'pay5', 5);
    await grant(redis(), shard, 'g', 'm');
    await redis().xadd(shard.key, '*', 'key', 'swallowed', 'payload', 'not json{');
    await redis().xadd(shard.key, '*', 'key', 'unread', 'payload', 'not json{');
    await redis().xadd(shard.key, '*', 'key', 'last', 'payload', '{"seq":1}');
    const seen: string[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      handle: (m) => {
        seen.push(m.key);
        if (m.key === 'swallowed') {
          try {
            void m.payload;
          } catch {
            // the handler goes on without the payload
          }
        }
        return Promise.resolve();
      },
    });
    reader.start();
    await waitFor(() => seen.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'three calls',
    });
    expect(seen).toEqual(['swallowed', 'unread', 'last']);
    await waitFor(async () => (await redis().xlen(shard.dlq)) === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'one dead letter',
    });
    const letters = await deadLetters(redis(), shard.dlq);
    expect(letters.map((l) => [l.reason, l.key])).toEqual([['undecodable', 'swallowed']]);
    expect(reader.counters).toMatchObject({ handled: 2, failed: 0, deadLettered: 1 });
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('with dead-lettering off, drops the message past maxDeliveries and acks it', async () => {
    const shard = testShard(prefix, 'pay3', 3);
    await grant(redis(), shard, 'g', 'm');
    await fill(redis(), shard.key, 2);
    const seen: Array<[number, number]> = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      maxDeliveries: 2,
      deadLetter: false,
      retry: { initialDelayMs: 1 },
      handle: async (m) => {
        seen.push([seqOf(m.payload), m.deliveryCount]);
        if (seqOf(m.payload) === 0) throw new Error('always');
      },
    });
    reader.start();
    await waitFor(() => seen.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'three calls',
    });
    expect(seen).toEqual([
      [0, 1],
      [0, 2],
      [1, 1],
    ]);
    expect(await redis().exists(shard.dlq)).toBe(0);
    expect(reader.counters.dropped).toBe(1);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('a poison message already past maxDeliveries when taken over is dead-lettered without another try', async () => {
    const shard = testShard(prefix, 'pay4', 4);
    await redis().xgroup('CREATE', shard.key, 'g', '0', 'MKSTREAM');
    const [poison] = await fill(redis(), shard.key, 2);
    // earlier owners took it and died twice (deliveries 1 and 2); our claim makes it 3 > 2
    await redis().xreadgroup('GROUP', 'g', 'old1', 'COUNT', 1, 'STREAMS', shard.key, '>');
    await redis().xclaim(shard.key, 'g', 'old2', 0, poison as string);
    await grant(redis(), shard, 'g', 'm');
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      maxDeliveries: 2,
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => seen.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the other one handled',
    });
    expect(seen).toEqual([1]);
    const [letter] = await deadLetters(redis(), shard.dlq);
    expect(letter).toMatchObject({ id: poison, reason: 'max-deliveries', deliveryCount: '3' });
    expect(letter).toMatchObject({
      error: 'delivered 3 times without being acknowledged (maxDeliveries 2)',
    });
    expect(letter!.stack).toMatch(/^MaxDeliveriesExceededError: /);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('asks alreadyApplied before dead-lettering: a failed check is retried, applied → acked, not applied → dead-lettered', async () => {
    const shard = testShard(prefix, 'pay-eo', 2);
    await grant(redis(), shard, 'g', 'm');
    const [appliedId, notAppliedId] = await Promise.all([
      redis().xadd(shard.key, '*', 'key', 'a', 'payload', '{"seq":0}'),
      redis().xadd(shard.key, '*', 'key', 'b', 'payload', '{"seq":1}'),
    ]);
    const checks: Array<[string, number]> = [];
    let failChecks = 2;
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      maxDeliveries: 2,
      retry: { initialDelayMs: 5, maxDelayMs: 20 },
      handle: async () => {
        throw new Error('failed after the commit');
      },
      alreadyApplied: async (message) => {
        checks.push([message.id, message.deliveryCount]);
        if (failChecks > 0) {
          failChecks--;
          throw new Error('database unreachable');
        }
        return message.id === appliedId;
      },
    });
    reader.start();
    await waitFor(async () => (await deadLetters(redis(), shard.dlq)).length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'one dead letter',
    });
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'both acked',
    });
    // two failed checks, then the answer, for the first entry; one for the second
    expect(checks).toEqual([
      [appliedId, 2],
      [appliedId, 2],
      [appliedId, 2],
      [notAppliedId, 2],
    ]);
    const letters = await deadLetters(redis(), shard.dlq);
    expect(letters.map((letter) => [letter.id, letter.reason])).toEqual([
      [notAppliedId, 'max-deliveries'],
    ]);
    expect(reader.counters).toMatchObject({ handled: 1, failed: 4, deadLettered: 1 });
  });
});
