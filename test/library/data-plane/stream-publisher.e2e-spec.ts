import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PublishArgumentError,
  RoutingCache,
  RoutingFetchError,
  StaleRoutingError,
  StreamPublisher,
  type RoutingSource,
} from '../../../libs/stream-coordinator/src/producer/index.js';
import {
  KeySpace,
  RoutingTable,
  routingFunctionFor,
  type StreamRouting,
} from '../../../libs/stream-coordinator/src/protocol/index.js';
import { useRedisPrefix, createTestRedis } from '../../support/redis.js';
import { setShardState } from './data-plane-fixtures.js';

/** An in-memory coordinator: the routing it serves can be switched; fetches are counted. */
class FakeRoutingSource implements RoutingSource {
  fetches = 0;
  constructor(public current: StreamRouting) {}
  fetchRouting(stream: string): Promise<StreamRouting> {
    this.fetches++;
    if (stream !== this.current.stream)
      return Promise.reject(new Error(`STREAM_NOT_FOUND ${stream}`));
    return Promise.resolve(this.current);
  }
}

function layout(keys: KeySpace, stream: string, epoch: number, shardIds: number[]): StreamRouting {
  return {
    stream,
    routingEpoch: epoch,
    shards: shardIds.map((id) => ({ id, key: keys.shardKey(stream, id) })),
    deadLetterKey: keys.deadLetterKey(stream),
    routing: routingFunctionFor(shardIds),
    resharding: null,
  };
}

async function entries(
  redis: Redis,
  key: string,
): Promise<Array<{ id: string; key: string; seq: number; headers?: string }>> {
  const raw = await redis.xrange(key, '-', '+');
  return raw.map(([id, fields]) => {
    const map = new Map<string, string>();
    for (let i = 0; i < fields.length; i += 2)
      map.set(fields[i] as string, fields[i + 1] as string);
    const headers = map.get('headers');
    return {
      id,
      key: map.get('key') ?? '',
      seq: (JSON.parse(map.get('payload') ?? 'null') as { seq: number }).seq,
      ...(headers ? { headers } : {}),
    };
  });
}

describe('StreamPublisher', () => {
  const { prefix, redis } = useRedisPrefix('publisher');
  const keys = new KeySpace(prefix);
  let connection: Redis;
  beforeAll(() => {
    connection = createTestRedis();
  });
  afterAll(() => connection.disconnect());

  async function openAll(routing: StreamRouting): Promise<void> {
    for (const shard of routing.shards) await setShardState(redis(), shard.key, 'open');
  }

  it('routes every key to the shard the routing table names, with payload and headers', async () => {
    const routing = layout(keys, 'route', 1, [0, 1, 2, 3]);
    await openAll(routing);
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(new FakeRoutingSource(routing)),
    });
    const ids: string[] = [];
    for (let seq = 0; seq < 200; seq++) {
      ids.push(
        await publisher.publish(
          'route',
          `customer-${seq}`,
          { seq },
          seq === 7 ? { headers: { trace: 'x' } } : {},
        ),
      );
    }
    const table = new RoutingTable(routing.routing);
    let total = 0;
    for (const shard of routing.shards) {
      const stored = await entries(redis(), shard.key);
      total += stored.length;
      expect(stored.length).toBeGreaterThan(20);
      for (const entry of stored) {
        expect(table.shardFor(entry.key)).toBe(shard.id);
        expect(entry.key).toBe(`customer-${entry.seq}`);
        expect(entry.id).toBe(ids[entry.seq]);
        if (entry.seq === 7) expect(entry.headers).toBe('{"trace":"x"}');
        else expect(entry.headers).toBeUndefined();
      }
    }
    expect(total).toBe(200);
  });

  it('STALE_ROUTING on a closed shard: refreshes routing and lands in the new shard', async () => {
    const v1 = layout(keys, 'stale', 1, [0]);
    const v2 = layout(keys, 'stale', 2, [1, 2]);
    await openAll(v1);
    const source = new FakeRoutingSource(v1);
    const publisher = new StreamPublisher({ connection, routing: new RoutingCache(source) });
    await publisher.publish('stale', 'k', { seq: 0 });
    // reshard: the coordinator closes shard 0 and publishes the new layout
    await setShardState(redis(), keys.shardKey('stale', 0), 'closed');
    await openAll(v2);
    source.current = v2;
    const id = await publisher.publish('stale', 'k', { seq: 1 });
    const target = v2.shards.find((s) => s.id === new RoutingTable(v2.routing).shardFor('k'));
    expect((await entries(redis(), target?.key ?? '')).map((e) => [e.id, e.seq])).toEqual([
      [id, 1],
    ]);
    expect((await entries(redis(), keys.shardKey('stale', 0))).map((e) => e.seq)).toEqual([0]);
    expect(source.fetches).toBe(2);
  });

  it('gives up with StaleRoutingError when refreshed routing keeps pointing at closed or removed shards', async () => {
    const v1 = layout(keys, 'dead', 1, [0, 1]);
    await setShardState(redis(), keys.shardKey('dead', 0), 'closed'); // shard 1 has no meta at all
    const source = new FakeRoutingSource(v1);
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(source),
      maxAttempts: 3,
      retryDelayMs: 1,
    });
    for (const key of ['a', 'b', 'c', 'd']) {
      const error = await publisher.publish('dead', key, { seq: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StaleRoutingError);
      expect((error as Error).message).toMatch(/after 3 attempts/);
    }
    expect(await redis().exists(keys.shardKey('dead', 0), keys.shardKey('dead', 1))).toBe(0);
    await expect(publisher.publish('missing', 'k', {})).rejects.toBeInstanceOf(RoutingFetchError);
  });

  it('a closed shard receives no write after closure, with concurrent publishers; per-key order holds', async () => {
    const v1 = layout(keys, 'race', 1, [0]);
    const v2 = layout(keys, 'race', 2, [1, 2, 3]);
    await openAll(v1);
    await openAll(v2);
    const source = new FakeRoutingSource(v1);
    const oldKey = keys.shardKey('race', 0);
    let lengthAtClosure = -1;
    const publishers = Array.from(
      { length: 4 },
      () => new StreamPublisher({ connection, routing: new RoutingCache(source), retryDelayMs: 2 }),
    );
    const perPublisher = 150;
    const run = publishers.map(async (publisher, p) => {
      for (let i = 0; i < perPublisher; i++) {
        const seq = p * perPublisher + i;
        await publisher.publish('race', `key-${p}-${i % 5}`, { seq });
        if (p === 0 && i === 50) {
          await setShardState(redis(), oldKey, 'closed');
          lengthAtClosure = await redis().xlen(oldKey);
          source.current = v2;
        }
      }
    });
    await Promise.all(run);
    expect(lengthAtClosure).toBeGreaterThan(50);
    expect(await redis().xlen(oldKey)).toBe(lengthAtClosure);
    const all = [oldKey, ...v2.shards.map((s) => s.key)];
    const byKey = new Map<string, number[]>();
    let total = 0;
    for (const key of all) {
      for (const entry of await entries(redis(), key)) {
        total++;
        byKey.set(entry.key, [...(byKey.get(entry.key) ?? []), entry.seq]);
      }
    }
    expect(total).toBe(4 * perPublisher);
    // old shard first, then the new shards: each key's sequence numbers only grow
    for (const seqs of byKey.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('publishBatch: ids in input order, one shard group per call, per-key order kept, stale groups rerouted', async () => {
    const v1 = layout(keys, 'batch', 1, [0, 1]);
    const v2 = layout(keys, 'batch', 2, [2, 3]);
    await openAll(v1);
    const source = new FakeRoutingSource(v1);
    const publisher = new StreamPublisher({ connection, routing: new RoutingCache(source) });
    const messages = Array.from({ length: 300 }, (_, seq) => ({
      key: `k${seq % 20}`,
      payload: { seq },
    }));
    const ids = await publisher.publishBatch('batch', messages);
    expect(ids).toHaveLength(300);
    const found = new Map<number, string>();
    for (const shard of v1.shards) {
      const stored = await entries(redis(), shard.key);
      const perKey = new Map<string, number[]>();
      for (const entry of stored) {
        found.set(entry.seq, entry.id);
        perKey.set(entry.key, [...(perKey.get(entry.key) ?? []), entry.seq]);
      }
      for (const seqs of perKey.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    }
    expect(ids).toEqual(messages.map((_, seq) => found.get(seq)));
    // shard 1 closes; the next batch's shard-1 group is refused and rerouted to v2
    await setShardState(redis(), keys.shardKey('batch', 1), 'closed');
    const closedLength = await redis().xlen(keys.shardKey('batch', 1));
    await openAll(v2);
    source.current = v2;
    const again = await publisher.publishBatch('batch', messages.slice(0, 40));
    expect(again.every((id) => typeof id === 'string')).toBe(true);
    expect(await redis().xlen(keys.shardKey('batch', 1))).toBe(closedLength);
    const v2Count =
      (await redis().xlen(keys.shardKey('batch', 2))) +
      (await redis().xlen(keys.shardKey('batch', 3)));
    expect(v2Count).toBeGreaterThan(0);
    expect(
      v2Count +
        (await redis().xlen(keys.shardKey('batch', 0))) +
        (await redis().xlen(keys.shardKey('batch', 1))),
    ).toBe(340);
    expect(await publisher.publishBatch('batch', [])).toEqual([]);
  });

  it('publishBatch ending in a routing error reports the ids it wrote on the shards that took them', async () => {
    const routing = layout(keys, 'partial', 1, [0, 1]);
    await setShardState(redis(), keys.shardKey('partial', 0), 'open');
    await setShardState(redis(), keys.shardKey('partial', 1), 'closed');
    const table = new RoutingTable(routing.routing);
    const messages = Array.from({ length: 20 }, (_, seq) => ({
      key: `c-${seq}`,
      payload: { seq },
    }));
    const onOpen = messages.filter((m) => table.shardFor(m.key) === 0).map((m) => m.payload.seq);
    expect(onOpen.length).toBeGreaterThan(0);
    expect(onOpen.length).toBeLessThan(messages.length);
    /** `[seq, id]` of what the error says was written, and of what the open shard holds. */
    const check = async (error: unknown): Promise<void> => {
      const published = (error as { publishedIds?: ReadonlyArray<string | undefined> })
        .publishedIds;
      expect(published).toHaveLength(messages.length);
      const stored = await entries(redis(), keys.shardKey('partial', 0));
      expect((published ?? []).flatMap((id, seq) => (id === undefined ? [] : [[seq, id]]))).toEqual(
        stored.map((e) => [e.seq, e.id]),
      );
      expect(stored.map((e) => e.seq)).toEqual(onOpen);
      await redis().del(keys.shardKey('partial', 0));
    };

    // the closed shard stays closed: StaleRoutingError after the open one was written
    const stale = new StreamPublisher({
      connection,
      routing: new RoutingCache(new FakeRoutingSource(routing)),
      maxAttempts: 3,
      retryDelayMs: 1,
    });
    const staleError = await stale.publishBatch('partial', messages).catch((e: unknown) => e);
    expect(staleError).toBeInstanceOf(StaleRoutingError);
    await check(staleError);

    // the refresh after the refusal fails: RoutingFetchError after the open one was written
    let fetches = 0;
    const vanishing: RoutingSource = {
      fetchRouting: () =>
        fetches++ === 0
          ? Promise.resolve(routing)
          : Promise.reject(
              Object.assign(new Error('STREAM_NOT_FOUND: deleted'), { code: 'STREAM_NOT_FOUND' }),
            ),
    };
    const fetchFails = new StreamPublisher({
      connection,
      routing: new RoutingCache(vanishing),
      retryDelayMs: 1,
    });
    const fetchError = await fetchFails.publishBatch('partial', messages).catch((e: unknown) => e);
    expect(fetchError).toBeInstanceOf(RoutingFetchError);
    await check(fetchError);
  });

  it('stale retries draw their delays from the injected random source (full jitter)', async () => {
    const routing = layout(keys, 'jitter', 1, [0]);
    await setShardState(redis(), keys.shardKey('jitter', 0), 'closed');
    let draws = 0;
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(new FakeRoutingSource(routing)),
      maxAttempts: 3,
      // a ceiling of a minute per retry: only the draw of 0 makes this test end in time
      retryDelayMs: 60_000,
      random: () => {
        draws++;
        return 0;
      },
    });
    await expect(publisher.publish('jitter', 'k', {})).rejects.toBeInstanceOf(StaleRoutingError);
    expect(draws).toBe(2);
  });

  it('applies the trimming policy (MAXLEN exact and approximate, MINID)', async () => {
    const routing = layout(keys, 'trim', 1, [0]);
    await openAll(routing);
    const key = keys.shardKey('trim', 0);
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(new FakeRoutingSource(routing)),
    });
    for (let seq = 0; seq < 30; seq++)
      await publisher.publish('trim', 'k', { seq }, { trim: { maxLen: 10, approximate: false } });
    expect(await redis().xlen(key)).toBe(10);
    expect((await entries(redis(), key))[0]?.seq).toBe(20);
    await publisher.publishBatch(
      'trim',
      Array.from({ length: 5 }, (_, i) => ({ key: 'k', payload: { seq: 30 + i } })),
      {
        trim: { maxLen: 3, approximate: false },
      },
    );
    expect((await entries(redis(), key)).map((e) => e.seq)).toEqual([32, 33, 34]);
    const last = await publisher.publish('trim', 'k', { seq: 35 });
    await publisher.publish(
      'trim',
      'k',
      { seq: 36 },
      { trim: { minId: last, approximate: false } },
    );
    expect((await entries(redis(), key)).map((e) => e.seq)).toEqual([35, 36]);
    await publisher.publish('trim', 'k', { seq: 37 }, { trim: { maxLen: 1000 } }); // approximate: a no-op here
    expect(await redis().xlen(key)).toBe(3);
  });

  it('rejects bad arguments with PublishArgumentError naming them', async () => {
    const routing = layout(keys, 'args', 1, [0]);
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(new FakeRoutingSource(routing)),
      retryDelayMs: 1,
    });
    await expect(publisher.publish('bad stream!', 'k', {})).rejects.toThrow(/stream must be/);
    await expect(publisher.publish('args', 42 as unknown as string, {})).rejects.toThrow(
      /routing key must be a string/,
    );
    await expect(
      publisher.publish('args', 'k', {}, { headers: { a: 1 as unknown as string } }),
    ).rejects.toThrow(/header "a" must be a string/);
    await expect(publisher.publish('args', 'k', undefined)).rejects.toThrow(
      /could not be serialized/,
    );
    await expect(publisher.publish('args', 'k', {}, { trim: { maxLen: -1 } })).rejects.toThrow(
      /maxLen/,
    );
    await expect(publisher.publish('args', 'k', {}, { trim: { minId: 'abc' } })).rejects.toThrow(
      /minId/,
    );
    await expect(
      publisher.publishBatch('args', [{ key: 'k', payload: 1 }, null as never]),
    ).rejects.toThrow(/message #1/);
    await expect(publisher.publish('args', 'k', {})).rejects.toBeInstanceOf(StaleRoutingError); // never opened
    await expect(publisher.publish('args', 42 as unknown as string, {})).rejects.toBeInstanceOf(
      PublishArgumentError,
    );
  });

  it('retries a routing fetch that failed transiently (coordinator restarting), not an unknown stream', async () => {
    const routing = layout(keys, 'flaky', 1, [0, 1]);
    await openAll(routing);
    let failures = 2;
    const source: RoutingSource = {
      fetchRouting: (stream) => {
        if (failures-- > 0)
          return Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: null }));
        return Promise.resolve({ ...routing, stream });
      },
    };
    const publisher = new StreamPublisher({
      connection,
      routing: new RoutingCache(source),
      retryDelayMs: 1,
    });
    expect(await publisher.publish('flaky', 'k', { seq: 1 })).toMatch(/^\d+-\d+$/);
    expect(failures).toBe(-1);

    let notFoundFetches = 0;
    const missing: RoutingSource = {
      fetchRouting: () => {
        notFoundFetches++;
        return Promise.reject(
          Object.assign(new Error('STREAM_NOT_FOUND: no such stream'), {
            code: 'STREAM_NOT_FOUND',
          }),
        );
      },
    };
    const strict = new StreamPublisher({
      connection,
      routing: new RoutingCache(missing),
      retryDelayMs: 1,
    });
    await expect(strict.publish('nope', 'k', {})).rejects.toBeInstanceOf(RoutingFetchError);
    expect(notFoundFetches).toBe(1);
  });
});
