import { Redis } from 'ioredis';
import { connectRedis } from '../../support/redis-client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deadLetterFields } from '../../../libs/stream-coordinator/src/data-plane/dead-letter.js';
import { DeadLetterService } from '../../../libs/stream-coordinator/src/dead-letters/dead-letter.service.js';
import { DeadLetterArgumentError } from '../../../libs/stream-coordinator/src/errors/dead-letters/dead-letter-argument.error.js';
import type { RoutingSource } from '../../../libs/stream-coordinator/src/producer/index.js';
import {
  KeySpace,
  routingFunctionFor,
  type StreamRouting,
} from '../../../libs/stream-coordinator/src/protocol/index.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { setShardState } from './data-plane-fixtures.js';

/** Serves a routing that the test can switch (the coordinator after a reshard). */
class SwitchableRouting implements RoutingSource {
  fetches = 0;
  constructor(public current: StreamRouting | null) {}
  fetchRouting(stream: string): Promise<StreamRouting> {
    this.fetches++;
    if (this.current === null || stream !== this.current.stream) {
      return Promise.reject(new Error(`STREAM_NOT_FOUND ${stream}`));
    }
    return Promise.resolve(this.current);
  }
}

function layout(keys: KeySpace, stream: string, epoch: number, ids: number[]): StreamRouting {
  return {
    stream,
    routingEpoch: epoch,
    shards: ids.map((id) => ({ id, key: keys.shardKey(stream, id) })),
    deadLetterKey: keys.deadLetterKey(stream),
    routing: routingFunctionFor(ids),
    resharding: null,
  };
}

describe('DeadLetterService against real Redis', () => {
  const { prefix, redis } = useRedisPrefix('dlq-service');
  const keys = new KeySpace(prefix);
  let connection: Redis;
  beforeAll(() => {
    connection = connectRedis(redisUrl());
  });
  afterAll(() => connection.disconnect());

  async function deadLetter(
    stream: string,
    key: string,
    group = 'g',
    error: Error = new Error('boom'),
  ): Promise<string> {
    const fields = deadLetterFields({
      fields: [
        Buffer.from('key'),
        Buffer.from(key),
        Buffer.from('payload'),
        Buffer.from(`"${key}"`),
      ],
      stream,
      shard: 0,
      group,
      id: '1-0',
      reason: 'max-deliveries',
      error,
      deliveryCount: 5,
      memberId: 'm',
      failedAt: new Date(),
    });
    return (await redis().xadd(keys.deadLetterKey(stream), '*', ...fields)) as string;
  }

  async function openAll(routing: StreamRouting): Promise<void> {
    for (const shard of routing.shards) await setShardState(redis(), shard.key, 'open');
  }

  const total = async (routing: StreamRouting): Promise<number> =>
    (await Promise.all(routing.shards.map((s) => redis().xlen(s.key)))).reduce((a, b) => a + b, 0);

  it('two replays at once publish every entry once', async () => {
    const routing = layout(keys, 'race', 1, [0, 1]);
    await openAll(routing);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await deadLetter('race', `k${i}`));
    const service = () =>
      new DeadLetterService({
        connection,
        keyPrefix: prefix,
        routing: new SwitchableRouting(routing),
      });
    const [a, b] = await Promise.all([
      service().replay('race', { ids }),
      service().replay('race', { ids }),
    ]);
    expect(a.replayed + b.replayed).toBe(20);
    for (let i = 0; i < ids.length; i++) {
      const outcomes = [a.results[i]?.outcome, b.results[i]?.outcome].sort();
      expect(outcomes.filter((o) => o === 'replayed')).toHaveLength(1);
      expect(['already-replayed', 'in-progress']).toContain(outcomes.find((o) => o !== 'replayed'));
    }
    expect(await total(routing)).toBe(20);
    const listed = await service().list('race', { replayed: true });
    expect(listed.entries.map((e) => e.id)).toEqual(ids);
    expect(listed.entries.every((e) => e.replay?.state === 'done' && e.replay.entryId)).toBe(true);
  });

  it('a shard closed by a reshard refuses the replay; the new routing is fetched and used', async () => {
    const before = layout(keys, 'moved', 1, [0, 1]);
    const after = layout(keys, 'moved', 2, [2, 3, 4]);
    await openAll(before);
    await openAll(after);
    const primer = await deadLetter('moved', 'primer');
    const id = await deadLetter('moved', 'customer-7');
    const source = new SwitchableRouting(before);
    const service = new DeadLetterService({ connection, keyPrefix: prefix, routing: source });
    // A first replay caches the old layout (as in a long-running program) ...
    expect((await service.replay('moved', { ids: [primer] })).replayed).toBe(1);
    // ... then the reshard closes the old shards and publishes the new layout.
    for (const shard of before.shards) await setShardState(redis(), shard.key, 'closed');
    source.current = after;
    const result = await service.replay('moved', { ids: [id] });
    expect(source.fetches).toBe(2);
    expect(result.results[0]).toMatchObject({ id, outcome: 'replayed' });
    expect(after.shards.map((s) => s.key)).toContain(result.results[0]?.shardKey);
    const [entry] = await redis().xrange(result.results[0]?.shardKey as string, '-', '+');
    expect(entry?.[1]).toEqual([
      'key',
      'customer-7',
      'payload',
      '"customer-7"',
      'headers',
      JSON.stringify({ 'rsc-replay-of': id }),
    ]);
    expect(await total(before)).toBe(1);
  });

  it('a claim left by a crashed replay is taken over after the lease, not before', async () => {
    const routing = layout(keys, 'crash', 1, [0]);
    await openAll(routing);
    const stale = await deadLetter('crash', 'a');
    const fresh = await deadLetter('crash', 'b');
    const [time] = await redis().time();
    const nowMs = Number(time) * 1000;
    await redis().hset(keys.deadLetterReplaysKey('crash'), {
      [stale]: JSON.stringify({ state: 'pending', token: 'dead', ms: nowMs - 120_000 }),
      [fresh]: JSON.stringify({ state: 'pending', token: 'live', ms: nowMs }),
    });
    const service = new DeadLetterService({
      connection,
      keyPrefix: prefix,
      routing: new SwitchableRouting(routing),
      claimLeaseMs: 60_000,
    });
    const result = await service.replay('crash', { ids: [stale, fresh] });
    expect(result.results.map((r) => r.outcome)).toEqual(['replayed', 'in-progress']);
    expect(await total(routing)).toBe(1);
  });

  it('a failed publish reports failed and releases the claim; a later replay succeeds', async () => {
    const routing = layout(keys, 'later', 1, [0]);
    await openAll(routing);
    const id = await deadLetter('later', 'k');
    const source = new SwitchableRouting(null);
    const service = new DeadLetterService({ connection, keyPrefix: prefix, routing: source });
    const failed = await service.replay('later', { ids: [id] });
    expect(failed.results[0]).toMatchObject({ id, outcome: 'failed' });
    expect(failed.results[0]?.message).toMatch(/STREAM_NOT_FOUND/);
    expect(await redis().hexists(keys.deadLetterReplaysKey('later'), id)).toBe(0);
    source.current = routing;
    const ok = await service.replay('later', { filter: {} });
    expect(ok.results.map((r) => r.outcome)).toEqual(['replayed']);
    expect((await service.replay('later', { filter: {} })).results).toEqual([]);
  });

  it('lists in pages over a bounded scan, filters on the error, purges only with confirmation', async () => {
    const service = new DeadLetterService({
      connection,
      keyPrefix: prefix,
      routing: new SwitchableRouting(null),
    });
    const ids: string[] = [];
    for (let i = 0; i < 450; i++) {
      ids.push(
        await deadLetter(
          'many',
          `k${i}`,
          i % 3 === 0 ? 'a' : 'b',
          new Error(i % 2 ? 'odd' : 'even'),
        ),
      );
    }
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await service.list(
        'many',
        { group: 'a', error: 'EVEN' },
        {
          limit: 40,
          ...(after ? { after } : {}),
        },
      );
      seen.push(...page.entries.map((e) => e.id));
      if (page.nextCursor === null) break;
      after = page.nextCursor;
    }
    expect(seen).toEqual(ids.filter((_, i) => i % 3 === 0 && i % 2 === 0));
    // A cursor before `fromMs` starts at `fromMs`.
    const lastMs = Number((ids[449] as string).split('-')[0]);
    const late = await service.list(
      'many',
      { fromMs: lastMs },
      { after: ids[0] as string, limit: 1000 },
    );
    expect(late.entries.map((e) => e.id)).toEqual(
      ids.filter((id) => Number(id.split('-')[0]) >= lastMs),
    );
    expect(late.scanned).toBe(late.entries.length);
    await expect(service.list('many', {}, { limit: 0 })).rejects.toThrow(DeadLetterArgumentError);
    await expect(service.list('many', {}, { after: 'x' })).rejects.toThrow(/must look like/);
    await expect(service.purge('many', { all: true }, { confirm: false })).rejects.toThrow(
      /confirm/,
    );
    expect(await redis().xlen(keys.deadLetterKey('many'))).toBe(450);
    expect(await service.purge('many', { filter: { group: 'a' } }, { confirm: true })).toEqual({
      stream: 'many',
      deleted: 150,
    });
    expect(
      await service.purge('many', { ids: [ids[1] as string, '1-1'] }, { confirm: true }),
    ).toEqual({
      stream: 'many',
      deleted: 1,
    });
    expect(await service.purge('many', { all: true }, { confirm: true })).toEqual({
      stream: 'many',
      deleted: 299,
    });
  });
});
