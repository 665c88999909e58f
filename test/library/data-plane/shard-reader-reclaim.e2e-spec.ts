import { describe, expect, it } from 'vitest';
import { useRedisPrefix } from '../../support/redis.js';
import {
  fill,
  gateOf,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
} from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

describe('ShardReader: taking over a previous owner’s pending entries', () => {
  const { prefix, redis } = useRedisPrefix('reclaim');
  const newReader = useReaders();

  it('claims the previous owner’s unacked entries and handles them first, in id order', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await redis().xgroup('CREATE', shard.key, 'g', '0', 'MKSTREAM');
    const ids = await fill(redis(), shard.key, 10);
    // the previous owner read 6 entries, acked two of them, then vanished
    await redis().xreadgroup('GROUP', 'g', 'old', 'COUNT', 6, 'STREAMS', shard.key, '>');
    await redis().xack(shard.key, 'g', ids[1] as string, ids[3] as string);
    await grant(redis(), shard, 'g', 'new', 2);
    const seen: Array<[number, number]> = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'new',
      batchSize: 2,
      handle: async (m) => void seen.push([seqOf(m.payload), m.deliveryCount]),
    });
    reader.start();
    await waitFor(() => seen.length === 8, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: '8 handled',
    });
    // pending ones first (each delivered twice now: old's read + our claim), then the new ones
    expect(seen).toEqual([
      [0, 2],
      [2, 2],
      [4, 2],
      [5, 2],
      [6, 1],
      [7, 1],
      [8, 1],
      [9, 1],
    ]);
    expect(reader.counters.claimed).toBe(4);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'all acked',
    });
  });

  it('skips pending entries that were deleted before the takeover', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await redis().xgroup('CREATE', shard.key, 'g', '0', 'MKSTREAM');
    const ids = await fill(redis(), shard.key, 3);
    await redis().xreadgroup('GROUP', 'g', 'old', 'COUNT', 3, 'STREAMS', shard.key, '>');
    await redis().xdel(shard.key, ids[1] as string);
    await grant(redis(), shard, 'g', 'new');
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'new',
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'two handled',
    });
    expect(seen).toEqual([0, 2]);
    expect(reader.counters.missing).toBe(1);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'PEL empty',
    });
  });

  it('waits until the fence names it before reading (the coordinator may still be writing it)', async () => {
    const shard = testShard(prefix, 'orders', 2);
    await fill(redis(), shard.key, 2);
    await grant(redis(), shard, 'g', 'someone-else');
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'late',
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => reader.status === 'starting', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'starting',
    });
    // the fence names another member: nothing may be read (bounded negative check)
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(seen).toEqual([]);
    expect(await redis().exists(shard.key)).toBe(1);
    expect(((await redis().xinfo('GROUPS', shard.key)) as unknown[]).length).toBe(0);
    await grant(redis(), shard, 'g', 'late', 2);
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'handled after the grant',
    });
    expect(seen).toEqual([0, 1]);
  });

  it('waits for its read gate too: a token naming it without a gate delivers nothing until the coordinator ensures the gate', async () => {
    const shard = testShard(prefix, 'orders', 3);
    await fill(redis(), shard.key, 2);
    await grant(redis(), shard, 'g', 'late');
    await redis().del(gateOf(shard, 'g', 'late')); // as if the gate had gone missing
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'late',
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => reader.status === 'starting', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'starting',
    });
    await new Promise((resolve) => setTimeout(resolve, 150)); // bounded negative check
    expect(seen).toEqual([]);
    expect(await pending(redis(), shard.key, 'g').catch(() => [])).toEqual([]);
    // a full heartbeat's ensure (the same grant again) re-creates the gate
    await grant(redis(), shard, 'g', 'late');
    await waitFor(() => seen.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'handled once the gate exists',
    });
    expect(seen).toEqual([0, 1]);
  });

  it('re-creates a consumer group deleted under it and goes on reading', async () => {
    const shard = testShard(prefix, 'orders', 4);
    await grant(redis(), shard, 'g', 'm');
    const seen: number[] = [];
    const reader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      blockMs: 10_000,
      handle: async (m) => void seen.push(seqOf(m.payload)),
    });
    reader.start();
    await waitFor(() => reader.status === 'reading', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'reading',
    });
    await redis().xgroup('DESTROY', shard.key, 'g');
    await waitFor(
      async () => ((await redis().xinfo('GROUPS', shard.key)) as unknown[]).length === 1,
      { timeoutMs: 5000, intervalMs: 10, message: 'group re-created' },
    );
    await fill(redis(), shard.key, 2);
    await waitFor(() => seen.length === 2, {
      timeoutMs: 5000,
      intervalMs: 10,
      message: 'handled after the group came back',
    });
    expect(seen).toEqual([0, 1]);
    expect(reader.status).toBe('reading');
  });
});
