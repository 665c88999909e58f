import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { activeShardIds } from '../../apps/coordinator/src/core/streams/stream-record.js';
import { DeclaredStreams } from '../../apps/coordinator/src/store/declared-streams.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { createTestRedis, useRedisPrefix } from '../support/redis.js';

/** A replica's declared streams over its own catalog cache, with the warnings it logged. */
function replica(redis: Redis, keys: KeySpace, shards: number) {
  const warnings: string[] = [];
  const registry = new StreamRegistry(redis, keys);
  const declared = new DeclaredStreams(registry, [{ stream: 'orders', shards }], Date.now, {
    warn: (m) => warnings.push(m),
  });
  return { registry, declared, warnings };
}

/**
 * Two replicas that both find a declared stream gone (Redis lost it) race to declare it again:
 * it is created once, and a replica whose `STREAMS` names another count says it kept the one
 * that won, as it does at start.
 */
describe('STREAMS declared again by two replicas', () => {
  const redis = useRedisPrefix('declared');
  let shared: Redis;
  beforeAll(() => {
    // One connection for both replicas: their commands reach Redis in the order they are sent,
    // so both HMGETs run before either create (the race, driven, not timed).
    shared = createTestRedis();
  });
  afterAll(async () => {
    await shared?.quit();
  });

  it('creates the lost stream once; the replica declaring another count warns', async () => {
    const keys = new KeySpace(redis.prefix);
    const four = replica(shared, keys, 4);
    const two = replica(shared, keys, 2);
    await four.declared.declare();
    await two.declared.declare();
    expect(two.warnings).toEqual([expect.stringContaining('exists with 4 shard(s)')]);
    two.warnings.length = 0;

    // Redis loses the catalog and the stream's event log (a wipe, seen from this prefix).
    await redis
      .redis()
      .del(keys.streamsKey(), keys.catalogVersionKey(), keys.streamEventsKey('orders'));

    await Promise.all([four.declared.check(), two.declared.check()]);
    for (const r of [four, two]) {
      expect(r.warnings.filter((w) => w.includes('orders is missing from Redis'))).toHaveLength(1);
    }
    const events = await four.registry.events('orders');
    expect(events.map((e) => e.type)).toEqual(['STREAM_CREATED']);
    const won = Number(events[0]?.data.shards);
    const record = four.registry.get('orders');
    expect(record && activeShardIds(record).length).toBe(won);
    const loser = won === 4 ? two : four;
    const winner = won === 4 ? four : two;
    expect(loser.warnings).toContainEqual(
      expect.stringContaining(
        `STREAMS declares orders:${won === 4 ? 2 : 4} but it exists with ${won} shard(s)`,
      ),
    );
    expect(winner.warnings.filter((w) => w.includes('but it exists'))).toEqual([]);

    // nothing is missing any more: a further check on either replica changes nothing
    await Promise.all([four.declared.check(), two.declared.check()]);
    expect((await four.registry.events('orders')).length).toBe(1);
    await Promise.all([four.declared.stop(), two.declared.stop()]);
  });

  it('restores a lost stream it saw before with its last layout, warning when STREAMS differs', async () => {
    const keys = new KeySpace(redis.prefix);
    const registry = new StreamRegistry(shared, keys);
    const last = (await registry.create('ledger', 3, Date.now())).record;
    await redis
      .redis()
      .del(keys.streamsKey(), keys.catalogVersionKey(), keys.streamEventsKey('ledger'));
    const warnings: string[] = [];
    let detections = 0;
    const declared = new DeclaredStreams(
      registry,
      [{ stream: 'ledger', shards: 2 }],
      Date.now,
      { warn: (m) => warnings.push(m) },
      {
        detectLoss: () => {
          detections++;
          return Promise.resolve();
        },
        remembered: (stream) => (stream === 'ledger' ? last : undefined),
      },
    );
    await declared.check();
    const record = registry.get('ledger');
    expect(record && activeShardIds(record)).toEqual([0, 1, 2]);
    expect(record?.routingEpoch).toBe(last.routingEpoch + 1);
    expect(detections).toBe(1);
    expect(warnings).toEqual([
      expect.stringContaining('ledger is missing from Redis'),
      expect.stringContaining(
        'STREAMS declares ledger:2 but it had 3 shard(s) before Redis lost it; restored with 3',
      ),
    ]);
    // nothing missing: no detection, nothing restored again
    await declared.check();
    expect(detections).toBe(1);
    expect((await registry.events('ledger')).length).toBe(1);
    await declared.stop();
  });
});
