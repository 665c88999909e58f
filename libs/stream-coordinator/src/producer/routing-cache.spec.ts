import { describe, expect, it } from 'vitest';
import { InvalidRoutingError } from '../errors/producer/invalid-routing.error.js';
import { RoutingFetchError } from '../errors/producer/routing-fetch.error.js';
import {
  KeySpace,
  RoutingTable,
  routingFunctionFor,
  type StreamRouting,
} from '../protocol/index.js';
import { CompiledRouting } from './compiled-routing.js';
import { RoutingCache } from './routing-cache.js';

const keys = new KeySpace('rsc');
function routing(epoch: number, shards: number[], stream = 'orders'): StreamRouting {
  return {
    stream,
    routingEpoch: epoch,
    shards: shards.map((id) => ({ id, key: keys.shardKey(stream, id) })),
    deadLetterKey: keys.deadLetterKey(stream),
    routing: routingFunctionFor(shards),
    resharding: null,
  };
}

describe('CompiledRouting', () => {
  it('maps keys to the shard and key the routing table names', () => {
    const body = routing(3, [4, 5, 6]);
    const compiled = new CompiledRouting(body);
    const table = new RoutingTable(body.routing);
    for (const key of ['a', 'b', 'customer-42', '']) {
      expect(compiled.shardFor(key)).toBe(table.shardFor(key));
      expect(compiled.shardKeyFor(key)).toBe(keys.shardKey('orders', table.shardFor(key)));
    }
    expect(compiled.routingEpoch).toBe(3);
  });

  it('rejects inconsistent metadata', () => {
    const body = routing(1, [0, 1]);
    expect(() => new CompiledRouting({ ...body, shards: [{ id: 0, key: 'k' }] })).toThrow(
      /unlisted shard 1/,
    );
    expect(() => new CompiledRouting({ ...body, shards: [] })).toThrow(InvalidRoutingError);
    expect(
      () => new CompiledRouting({ ...body, routing: { ...body.routing, hash: 'x' as never } }),
    ).toThrow(/unsupported routing function/);
    expect(
      () =>
        new CompiledRouting({
          ...body,
          routing: { ...body.routing, ranges: body.routing.ranges.slice(1) },
        }),
    ).toThrow(/cover every slot/);
  });
});

describe('RoutingCache', () => {
  function source(answers: StreamRouting[]) {
    const calls: string[] = [];
    let release: () => void = () => undefined;
    let gate = Promise.resolve();
    return {
      calls,
      hold: () => {
        gate = new Promise((resolve) => {
          release = resolve;
        });
      },
      release: () => release(),
      fetchRouting: async (stream: string) => {
        calls.push(stream);
        await gate;
        const answer = answers.shift();
        if (!answer) throw new Error('STREAM_NOT_FOUND');
        return answer;
      },
    };
  }

  it('fetches once for concurrent callers and caches until invalidated', async () => {
    const src = source([routing(1, [0]), routing(2, [0, 1])]);
    const cache = new RoutingCache(src);
    src.hold();
    const [a, b] = [cache.get('orders'), cache.get('orders')];
    src.release();
    expect(await a).toBe(await b);
    expect(src.calls).toHaveLength(1);
    expect(cache.peek('orders')?.routingEpoch).toBe(1);
    cache.invalidate('orders', 1);
    expect(cache.peek('orders')).toBeUndefined();
    expect((await cache.get('orders')).routingEpoch).toBe(2);
    // a stale epoch does not drop a newer routing another caller already fetched
    cache.invalidate('orders', 1);
    expect(cache.peek('orders')?.routingEpoch).toBe(2);
    expect(src.calls).toHaveLength(2);
  });

  it('an invalidation during a fetch makes the next get fetch again', async () => {
    const src = source([routing(1, [0]), routing(2, [0])]);
    const cache = new RoutingCache(src);
    src.hold();
    const first = cache.get('orders');
    cache.invalidate('orders');
    const second = cache.get('orders');
    src.release();
    expect((await first).routingEpoch).toBe(1);
    expect((await second).routingEpoch).toBe(2);
    expect(cache.peek('orders')?.routingEpoch).toBe(2);
  });

  it('wraps source failures and does not cache them', async () => {
    const src = source([]);
    const cache = new RoutingCache(src);
    await expect(cache.get('orders')).rejects.toBeInstanceOf(RoutingFetchError);
    await expect(cache.get('orders')).rejects.toThrow(
      /Could not fetch routing for stream orders from the coordinator: STREAM_NOT_FOUND/,
    );
    expect(src.calls).toHaveLength(2);
    const wrong = new RoutingCache(source([routing(1, [0], 'other')]));
    await expect(wrong.get('orders')).rejects.toThrow(/answered for stream other/);
  });
});
