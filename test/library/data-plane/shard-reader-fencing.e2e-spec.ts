import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FencedError,
  ShardCommands,
  type ShardLostReason,
} from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import {
  deferred,
  fill,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
  waitFor,
} from './data-plane-fixtures.js';

describe('ShardReader: data-plane fencing', () => {
  const { prefix, redis } = useRedisPrefix('fencing');
  const newReader = useReaders();

  it('a fenced reader stops, reports the shard lost, and its late ack is refused; the new owner takes the entry over', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'A', 1);
    const ids = await fill(redis(), shard.key, 4);
    const gate = deferred();
    const byA: number[] = [];
    const lost: ShardLostReason[] = [];
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      maxAckDelayMs: 0, // every ack at once: the refused one is exactly the late one
      handle: async (m) => {
        if (seqOf(m.payload) === 1) await gate.promise;
        byA.push(seqOf(m.payload));
      },
      onLost: (reason) => void lost.push(reason),
    });
    a.start();
    await waitFor(
      () => byA.length === 1 && a.handlerRunningSince !== undefined,
      'A blocked on entry 1',
    );
    // the coordinator moves the shard to B while A's handler still runs
    await grant(redis(), shard, 'g', 'B', 2);
    gate.resolve();
    await waitFor(() => lost.length === 1, 'A reports the shard lost');
    expect(lost[0]).toMatchObject({ code: 'FENCED', currentOwner: '2:B' });
    expect(a.status).toBe('lost');
    expect(byA).toEqual([0, 1]);
    // A's late ack of entry 1 was refused, and A handled nothing after it: entries 1-3 are
    // still pending on A
    const stillPending = await pending(redis(), shard.key, 'g');
    expect(stillPending.map((p) => [p[0], p[1]])).toEqual(ids.slice(1).map((id) => [id, 'A']));
    const byB: Array<[number, number]> = [];
    const b = newReader({
      shard,
      group: 'g',
      memberId: 'B',
      handle: async (m) => void byB.push([seqOf(m.payload), m.deliveryCount]),
    });
    b.start();
    await waitFor(() => byB.length === 3, 'B handles everything A left');
    expect(byB).toEqual([
      [1, 2],
      [2, 2],
      [3, 2],
    ]);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, 'acked by B');
    await a.stop(); // after lost: resolves at once
    expect(a.status).toBe('lost');
  });

  it('a reader idle in XREAD BLOCK notices the fence moved within blockMs and stops', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis(), shard, 'g', 'A');
    const lost: ShardLostReason[] = [];
    const byA: number[] = [];
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      blockMs: 200,
      handle: async (m) => void byA.push(seqOf(m.payload)),
      onLost: (r) => void lost.push(r),
    });
    a.start();
    await waitFor(() => a.status === 'reading', 'A reading');
    await redis().hdel(shard.meta, 'owner:g');
    const moved = performance.now();
    await waitFor(() => lost.length === 1, 'A lost', 3000);
    expect(performance.now() - moved).toBeLessThan(200 + 1000);
    expect(lost[0]?.currentOwner).toBeNull();
    await fill(redis(), shard.key, 1);
    expect(byA).toEqual([]);
  });
});

describe('fenced scripts called directly', () => {
  const { prefix, redis } = useRedisPrefix('fence-scripts');
  let connection: Redis;
  beforeAll(() => {
    connection = new Redis(redisUrl());
  });
  afterAll(() => connection.disconnect());

  it('a non-owner can neither read nor ack, and nothing changes', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'owner');
    const owner = new ShardCommands(shard.key, 'g', 'owner');
    const intruder = new ShardCommands(shard.key, 'g', 'intruder');
    await expect(intruder.acquire(connection)).rejects.toBeInstanceOf(FencedError);
    expect(await redis().exists(shard.key)).toBe(0);
    await owner.acquire(connection);
    const ids = await fill(redis(), shard.key, 3);
    const read = await owner.ackAndRead(connection, [], 10);
    expect(read.kind).toBe('entries');

    const refused = await intruder.ack(connection, ids).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FencedError);
    expect(refused).toMatchObject({ currentOwner: '1:owner', memberId: 'intruder' });
    await expect(intruder.ackAndRead(connection, ids, 10)).rejects.toBeInstanceOf(FencedError);
    await expect(intruder.claim(connection, '0-0', 10)).rejects.toBeInstanceOf(FencedError);
    await expect(intruder.redeliver(connection, ids[0] as string)).rejects.toBeInstanceOf(
      FencedError,
    );
    const after = await pending(redis(), shard.key, 'g');
    expect(after.map((p) => [p[0], p[1], p[3]])).toEqual(ids.map((id) => [id, 'owner', 1]));

    // a malformed token or a missing one fences everybody
    await redis().hset(shard.meta, 'owner:g', 'owner');
    await expect(owner.ack(connection, ids)).rejects.toBeInstanceOf(FencedError);
    await redis().hdel(shard.meta, 'owner:g');
    await expect(owner.ack(connection, ids)).rejects.toMatchObject({ currentOwner: null });
    // the fence is per group: another group's owner does not count
    await grant(redis(), shard, 'other', 'owner');
    await expect(owner.ack(connection, ids)).rejects.toBeInstanceOf(FencedError);
    expect((await pending(redis(), shard.key, 'g')).length).toBe(3);
  });

  it('the owner’s scripts: claim takes over with delivery counts, redeliver bumps the count, ackAndRead reports the last id and orphans', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis(), shard, 'g', 'me');
    const me = new ShardCommands(shard.key, 'g', 'me');
    await me.acquire(connection);
    await me.acquire(connection); // BUSYGROUP is ignored
    const empty = await me.ackAndRead(connection, [], 10);
    expect(empty).toEqual({ kind: 'empty', lastId: '0-0' });
    const ids = await fill(redis(), shard.key, 3);
    await redis().xreadgroup('GROUP', 'g', 'prev', 'COUNT', 2, 'STREAMS', shard.key, '>');
    const claimed = await me.claim(connection, '0-0', 10);
    expect(claimed.cursor).toBe('0-0');
    expect(claimed.entries.map((e) => [e[0].toString(), e[2]])).toEqual([
      [ids[0], 2],
      [ids[1], 2],
    ]);
    const again = await me.redeliver(connection, ids[0] as string);
    expect(again?.[2]).toBe(3);
    // our own pending entries must be acked before reading: otherwise they are orphans
    expect(await me.ackAndRead(connection, [ids[1] as string], 10)).toEqual({ kind: 'orphans' });
    const read = await me.ackAndRead(connection, [ids[0] as string], 10);
    expect(read.kind === 'entries' && read.entries.map((e) => e[0].toString())).toEqual([ids[2]]);
    expect(await me.ackAndRead(connection, [ids[2] as string], 10)).toEqual({
      kind: 'empty',
      lastId: ids[2],
    });
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
    // ids-only read + XRANGE: the entries come back when the position is right…
    const more = await fill(redis(), shard.key, 3, 3);
    const after = await me.ackAndReadAfter(connection, [], 2, ids[2] as string);
    expect(after.kind === 'entries' && after.entries.map((e) => e[0].toString())).toEqual(
      more.slice(0, 2),
    );
    // …and a wrong position is detected (the delivered entry stays pending for the claim phase)
    expect(await me.ackAndReadAfter(connection, more.slice(0, 2), 5, ids[0] as string)).toEqual({
      kind: 'orphans',
    });
    expect((await pending(redis(), shard.key, 'g')).map((p) => p[0])).toEqual([more[2]]);
    await me.ack(connection, [more[2] as string]);
    await redis().xdel(shard.key, ids[2] as string);
    expect(await me.redeliver(connection, ids[2] as string)).toBeNull();
  });
});
