import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FencedError,
  ORPHANS_PENDING,
  ShardCommands,
  ShardReadRefusedError,
  type ShardLostReason,
} from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { useRedisPrefix, createTestRedis } from '../../support/redis.js';
import {
  consumers,
  deferred,
  fill,
  gateOf,
  grant,
  pending,
  release,
  seqOf,
  testReaderConnection,
  testShard,
  useReaders,
} from './data-plane-fixtures.js';
import { waitFor } from '../../support/wait.js';

describe('ShardReader: data-plane fencing', () => {
  const { prefix, redis } = useRedisPrefix('fencing');
  const newReader = useReaders();

  it('a fenced reader stops, reports the shard lost, and its late ack is refused; the new owner takes the entry over', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'A', 1);
    const ids = await fill(redis(), shard.key, 4);
    const gate = deferred();
    const byA: number[] = [];
    const ackedByA: string[] = [];
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
      hooks: { acked: (acked) => void ackedByA.push(...acked) },
      onLost: (reason) => void lost.push(reason),
    });
    a.start();
    await waitFor(() => byA.length === 1 && a.handlerRunningSince !== undefined, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A blocked on entry 1',
    });
    // the coordinator moves the shard to B while A's handler still runs
    await grant(redis(), shard, 'g', 'B', 2);
    gate.resolve();
    await waitFor(() => lost.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A reports the shard lost',
    });
    expect(lost[0]).toMatchObject({ code: 'FENCED', currentOwner: '2:B' });
    expect(a.status).toBe('lost');
    expect(byA).toEqual([0, 1]);
    expect(ackedByA).toEqual([ids[0]]); // the refused ack is not reported
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
    await waitFor(() => byB.length === 3, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'B handles everything A left',
    });
    expect(byB).toEqual([
      [1, 2],
      [2, 2],
      [3, 2],
    ]);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked by B',
    });
    await a.stop(); // after lost: resolves at once
    expect(a.status).toBe('lost');
  });

  it('a member given a shard back (same member id) counts the deliveries its earlier reader made', async () => {
    // Regression: the claim phase kept the delivery count of every entry pending on the member
    // itself. A member whose handler got it fenced (or, with a fixed member id, crashed its
    // process) got the shard back and ran the same entry again at the same count — for ever,
    // never dead-lettered. Only the current reader's own unhandled tail keeps its count.
    const shard = testShard(prefix, 'orders', 3);
    await grant(redis(), shard, 'g', 'A', 1);
    await fill(redis(), shard.key, 2);
    const gate = deferred();
    const first: Array<[number, number]> = [];
    const lost: ShardLostReason[] = [];
    const a1 = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      maxAckDelayMs: 0, // the ack of entry 0 goes at once: refused, so entry 1 is never handed
      handle: async (m) => {
        first.push([seqOf(m.payload), m.deliveryCount]);
        await gate.promise;
      },
      onLost: (reason) => void lost.push(reason),
    });
    a1.start();
    await waitFor(() => first.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the first reader runs entry 0',
    });
    await release(redis(), shard, 'g', 2);
    gate.resolve();
    await waitFor(() => lost.length === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the first reader reports the shard lost',
    });
    expect((await pending(redis(), shard.key, 'g')).map((p) => [p[1], p[3]])).toEqual([
      ['A', 1],
      ['A', 1],
    ]);
    await grant(redis(), shard, 'g', 'A', 3);
    const second: Array<[number, number]> = [];
    const a2 = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      handle: async (m) => void second.push([seqOf(m.payload), m.deliveryCount]),
    });
    a2.start();
    await waitFor(() => second.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'the second reader handles both entries',
    });
    expect(first).toEqual([[0, 1]]);
    expect(second).toEqual([
      [0, 2],
      [1, 2],
    ]);
    await waitFor(async () => (await pending(redis(), shard.key, 'g')).length === 0, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'acked',
    });
  });

  it('a reader blocked in its gated read stops at once when the coordinator moves the shard, and reads nothing after', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis(), shard, 'g', 'A');
    const lost: ShardLostReason[] = [];
    const byA: number[] = [];
    const name = `${prefix}-reader-A`;
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      blockMs: 20_000, // far longer than the bound below: only the gate's deletion can end it
      createConnection: () => testReaderConnection(undefined, name),
      handle: async (m) => void byA.push(seqOf(m.payload)),
      onLost: (r) => void lost.push(r),
    });
    a.start();
    await waitFor(() => a.status === 'reading', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A reading',
    });
    await waitFor(() => isBlocked(redis(), name), {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A blocked in XREADGROUP',
    });
    await release(redis(), shard, 'g', 2);
    const moved = performance.now();
    await fill(redis(), shard.key, 2);
    await waitFor(() => lost.length === 1, { timeoutMs: 5000, intervalMs: 10, message: 'A lost' });
    expect(performance.now() - moved).toBeLessThan(2000);
    expect(lost[0]?.currentOwner).toBeNull();
    expect(byA).toEqual([]);
    // the entries added right after the release were never delivered to A
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
    expect(await redis().exists(gateOf(shard, 'g', 'A'))).toBe(0);
  });

  it('a reader whose fence token alone was changed (gate left behind) notices it within blockMs through its ack', async () => {
    const shard = testShard(prefix, 'orders', 2);
    await grant(redis(), shard, 'g', 'A');
    const lost: ShardLostReason[] = [];
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      blockMs: 200,
      handle: async () => undefined,
      onLost: (r) => void lost.push(r),
    });
    a.start();
    await waitFor(() => a.status === 'reading', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A reading',
    });
    await redis().hdel(shard.meta, 'owner:g');
    const moved = performance.now();
    await waitFor(() => lost.length === 1, { timeoutMs: 3000, intervalMs: 10, message: 'A lost' });
    expect(performance.now() - moved).toBeLessThan(200 + 1000);
    expect(lost[0]?.currentOwner).toBeNull();
  });
});

/** True when the client named `name` is blocked in a command right now. */
async function isBlocked(redis: Redis, name: string): Promise<boolean> {
  const list = (await redis.client('LIST')) as string;
  return list
    .split('\n')
    .some((line) => line.includes(` name=${name} `) && /\bflags=\S*b/.test(line));
}

describe('fenced scripts called directly', () => {
  const { prefix, redis } = useRedisPrefix('fence-scripts');
  let connection: Redis;
  beforeAll(() => {
    connection = createTestRedis();
  });
  afterAll(() => connection.disconnect());

  it('a non-owner can neither read nor ack, and nothing changes', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'owner');
    const owner = new ShardCommands(shard.key, 'g', 'owner');
    const intruder = new ShardCommands(shard.key, 'g', 'intruder');
    await expect(intruder.acquire(connection)).rejects.toBeInstanceOf(FencedError);
    expect(await redis().exists(shard.key)).toBe(0);
    expect(await owner.acquire(connection)).toBe('ready');
    const ids = await fill(redis(), shard.key, 3);
    expect((await owner.read(connection, 10)).map((e) => e[0].toString())).toEqual(ids);

    const refused = await intruder.ack(connection, ids).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(FencedError);
    expect(refused).toMatchObject({ currentOwner: '1:owner', memberId: 'intruder' });
    await expect(intruder.ackBeforeRead(connection, ids)).rejects.toBeInstanceOf(FencedError);
    await expect(intruder.claim(connection, '0-0', 10)).rejects.toBeInstanceOf(FencedError);
    await expect(intruder.redeliver(connection, ids[0] as string)).rejects.toBeInstanceOf(
      FencedError,
    );
    // the intruder has no gate: its read is refused before anything is delivered
    const more = await fill(redis(), shard.key, 2, 3);
    const denied = await intruder.read(connection, 10).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(ShardReadRefusedError);
    expect(denied).toMatchObject({ refusal: 'gate-closed' });
    await expect(intruder.read(connection, 10, 50)).rejects.toMatchObject({
      refusal: 'gate-closed',
    });
    const after = await pending(redis(), shard.key, 'g');
    expect(after.map((p) => [p[0], p[1], p[3]])).toEqual(ids.map((id) => [id, 'owner', 1]));
    expect((await consumers(redis(), shard.key, 'g')).map(([name]) => name)).toEqual(['owner']);
    // …and the entries it was refused are still there for the owner
    expect((await owner.read(connection, 10)).map((e) => e[0].toString())).toEqual(more);

    // a malformed token or a missing one fences everybody
    await redis().hset(shard.meta, 'owner:g', 'owner');
    await expect(owner.ack(connection, ids)).rejects.toBeInstanceOf(FencedError);
    await redis().hdel(shard.meta, 'owner:g');
    await expect(owner.ack(connection, ids)).rejects.toMatchObject({ currentOwner: null });
    // the fence is per group: another group's owner does not count
    await grant(redis(), shard, 'other', 'owner');
    await expect(owner.ack(connection, ids)).rejects.toBeInstanceOf(FencedError);
    expect((await pending(redis(), shard.key, 'g')).length).toBe(5);
  });

  it('Redis checks the gate’s consumer group before serving the shard: a missing gate delivers nothing; a missing shard group is told apart', async () => {
    const shard = testShard(prefix, 'orders', 2);
    const me = new ShardCommands(shard.key, 'g', 'me');
    await redis().xgroup('CREATE', shard.key, 'g', '0', 'MKSTREAM');
    const ids = await fill(redis(), shard.key, 3);
    const before = await groupInfo(redis(), shard.key, 'g');
    // no gate key at all, then a gate key without the group's consumer group
    await expect(me.read(connection, 10)).rejects.toMatchObject({ refusal: 'gate-closed' });
    await redis().xgroup('CREATE', me.gateKey, 'another-group', '$', 'MKSTREAM');
    await expect(me.read(connection, 10)).rejects.toMatchObject({ refusal: 'gate-closed' });
    expect(await groupInfo(redis(), shard.key, 'g')).toEqual(before);
    expect(before).toMatchObject({ pending: 0, 'last-delivered-id': '0-0', consumers: 0 });
    // a gate but no consumer group on the shard: the other NOGROUP, naming the shard
    await grant(redis(), shard, 'g2', 'me');
    const other = new ShardCommands(shard.key, 'g2', 'me');
    await expect(other.read(connection, 10)).rejects.toMatchObject({ refusal: 'no-group' });
    expect(await other.acquire(connection)).toBe('ready'); // creates the group
    expect((await other.read(connection, 10)).map((e) => e[0].toString())).toEqual(ids);
    // the fence names the member but its gate is gone: acquire says so (the reader waits)
    await redis().del(other.gateKey);
    expect(await other.acquire(connection)).toBe('no-gate');
  });

  it('a read blocked on the gate ends with UNBLOCKED the moment the coordinator deletes the gate; an entry added right after is not delivered', async () => {
    const shard = testShard(prefix, 'orders', 3);
    await grant(redis(), shard, 'g', 'A');
    const a = new ShardCommands(shard.key, 'g', 'A');
    const name = `${prefix}-blocked`;
    const blocked = createTestRedis({ connectionName: name });
    try {
      await a.acquire(blocked);
      // a re-grant to the same owner keeps its blocked read going
      const first = a.read(blocked, 10, 10_000);
      await waitFor(() => isBlocked(redis(), name), {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'A blocked',
      });
      await grant(redis(), shard, 'g', 'A', 2);
      const [id] = await fill(redis(), shard.key, 1);
      expect((await first).map((e) => e[0].toString())).toEqual([id]);
      await a.ack(connection, [id as string]);
      // the shard moves to B while A is blocked
      const second = a.read(blocked, 10, 10_000).catch((e: unknown) => e);
      await waitFor(() => isBlocked(redis(), name), {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'A blocked again',
      });
      const moved = performance.now();
      await grant(redis(), shard, 'g', 'B', 3);
      await fill(redis(), shard.key, 1, 1);
      const ended = await second;
      expect(performance.now() - moved).toBeLessThan(1000);
      expect(ended).toBeInstanceOf(ShardReadRefusedError);
      expect(ended).toMatchObject({ refusal: 'unblocked' });
      expect((ended as Error).message).toContain('UNBLOCKED');
      expect(await pending(redis(), shard.key, 'g')).toEqual([]);
      expect(await redis().exists(a.gateKey)).toBe(0);
      await expect(a.read(blocked, 10, 100)).rejects.toMatchObject({ refusal: 'gate-closed' });
    } finally {
      blocked.disconnect();
    }
  });

  it('the owner’s scripts: claim takes over with delivery counts, redeliver bumps the count, ackBeforeRead reports orphans', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis(), shard, 'g', 'me');
    const me = new ShardCommands(shard.key, 'g', 'me');
    expect(await me.acquire(connection)).toBe('ready');
    expect(await me.acquire(connection)).toBe('ready'); // BUSYGROUP is ignored
    expect(await me.read(connection, 10)).toEqual([]);
    expect(await me.read(connection, 10, 20)).toEqual([]); // a block that timed out
    expect(await me.ackBeforeRead(connection, [])).toBe(0);
    const ids = await fill(redis(), shard.key, 3);
    await redis().xreadgroup('GROUP', 'g', 'prev', 'COUNT', 2, 'STREAMS', shard.key, '>');
    const claimed = await me.claim(connection, '0-0', 10);
    expect(claimed.cursor).toBe('0-0');
    expect(claimed.entries.map((e) => [e[0].toString(), e[2]])).toEqual([
      [ids[0], 2],
      [ids[1], 2],
    ]);
    // re-reading its own pending entries is no delivery, unless it is the one last handed out
    const reread = await me.claim(connection, '0-0', 10);
    expect(reread.entries.map((e) => [e[0].toString(), e[2]])).toEqual([
      [ids[0], 2],
      [ids[1], 2],
    ]);
    const handed = await me.claim(connection, '0-0', 1, {
      handed: { id: ids[0] as string, deliveryCount: 2 },
    });
    expect(handed.cursor).toBe(ids[1]);
    expect(handed.entries.map((e) => [e[0].toString(), e[2]])).toEqual([[ids[0], 3]]);
    // a handed entry whose count moved on since (a redelivery whose reply was lost) keeps it
    const moved = await me.claim(connection, '0-0', 10, {
      handed: { id: ids[0] as string, deliveryCount: 2 },
    });
    expect(moved.entries.map((e) => e[2])).toEqual([3, 2]);
    // entries pending on this member before the current reader took them over (an earlier
    // reader of the same member id) are a new delivery: from `foreignFrom` on, and below the
    // entry last handed out (those were handed already)
    const foreign = await me.claim(connection, '0-0', 10, { foreignFrom: ids[1] as string });
    expect(foreign.entries.map((e) => e[2])).toEqual([3, 3]);
    const fresh = await me.claim(connection, '0-0', 10, { foreignFrom: '0-0' });
    expect(fresh.entries.map((e) => e[2])).toEqual([4, 4]);
    const below = await me.claim(connection, '0-0', 10, {
      handed: { id: ids[1] as string, deliveryCount: 1 },
    });
    expect(below.entries.map((e) => e[2])).toEqual([5, 4]);
    // …except the first `maybeTaken` from `foreignFrom` (a claim whose reply was lost took them)
    const lost = await me.claim(connection, '0-0', 10, {
      foreignFrom: ids[0] as string,
      maybeTaken: 1,
    });
    expect(lost.entries.map((e) => e[2])).toEqual([5, 5]);
    await redis().xclaim(shard.key, 'g', 'me', 0, ids[0] as string, 'RETRYCOUNT', 3);
    await redis().xclaim(shard.key, 'g', 'me', 0, ids[1] as string, 'RETRYCOUNT', 2);
    const again = await me.redeliver(connection, ids[0] as string);
    expect(again?.[2]).toBe(4);
    // our own pending entries must be acked before reading: otherwise they are orphans
    expect(await me.ackBeforeRead(connection, [ids[1] as string])).toBe(ORPHANS_PENDING);
    expect(await me.ackBeforeRead(connection, [ids[0] as string])).toBe(1);
    const read = await me.read(connection, 10);
    expect(read.map((e) => e[0].toString())).toEqual([ids[2]]);
    // a read whose reply was lost leaves its entries pending: the next ackBeforeRead says so
    const more = await fill(redis(), shard.key, 2, 3);
    await me.read(connection, 10);
    expect(await me.ackBeforeRead(connection, [ids[2] as string])).toBe(ORPHANS_PENDING);
    expect((await pending(redis(), shard.key, 'g')).map((p) => p[0])).toEqual(more);
    expect(await me.ack(connection, more)).toBe(2);
    expect(await me.ackBeforeRead(connection, [])).toBe(0);
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
    await redis().xdel(shard.key, ids[2] as string);
    expect(await me.redeliver(connection, ids[2] as string)).toBeNull();
  });

  it('acks go as one argument: 2,500 ids in one ack (past the script’s 1,000-id XACK chunks), and ids not pending are not counted', async () => {
    const shard = testShard(prefix, 'bulk-acks', 0);
    await grant(redis(), shard, 'g', 'me');
    const me = new ShardCommands(shard.key, 'g', 'me');
    expect(await me.acquire(connection)).toBe('ready');
    const ids = await fill(redis(), shard.key, 2500);
    const read = await me.read(connection, 3000);
    expect(read).toHaveLength(2500);
    expect(await me.ack(connection, [...ids, '1-1', ids[0] as string])).toBe(2500);
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
    const more = await fill(redis(), shard.key, 3, 2500);
    await me.read(connection, 10);
    expect(await me.ackBeforeRead(connection, more)).toBe(3);
    expect(await me.ack(connection, [])).toBe(0);
  });
});

/** `XINFO GROUPS` of `key` for `group` as a record, or null when there is none. */
async function groupInfo(
  redis: Redis,
  key: string,
  group: string,
): Promise<Record<string, unknown> | null> {
  const groups = (await redis.xinfo('GROUPS', key).catch(() => [])) as unknown[][];
  for (const flat of groups) {
    const record: Record<string, unknown> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
    if (record.name === group) return record;
  }
  return null;
}
