import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  KeySpace,
  routingFunctionFor,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import { withNextVersion } from '../../apps/coordinator/src/core/streams/reshard-steps.js';
import {
  activeShardIds,
  type StreamRecord,
} from '../../apps/coordinator/src/core/streams/stream-record.js';
import { ShardDataPlane } from '../../apps/coordinator/src/store/shard-data-plane.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../support/redis.js';
import {
  MarkerThen,
  startStubbedLifecycle,
  type StubbedLifecycle,
} from './support/stubbed-lifecycle.js';

/** A replica's registry that, while `frozen`, keeps its cache (it missed catalog changes). */
class Freezable extends StreamRegistry {
  frozen = false;
  override async refresh(): Promise<void> {
    if (!this.frozen) await super.refresh();
  }
}

interface Replica extends StubbedLifecycle {
  readonly registry: Freezable;
  readonly marker: MarkerThen;
}

/**
 * Two replicas notice one loss of Redis's data through different paths (docs/protocol.md §13.6):
 * A, which declares `orders` in `STREAMS`, has its marker check pass just before the loss and
 * finds out through the `STREAMS` check that follows; B finds out through its marker. A also
 * missed the reshard of `orders` from 2 to 4 shards that B saw, so they restore different
 * layouts. Whichever writes first is kept; afterwards exactly the kept record's shards are open
 * (a producer holding the other layout gets `STALE_ROUTING` and refreshes), and a replica whose
 * memory is newer than what was kept says so.
 */
describe('two replicas noticing one loss through different paths', () => {
  let raw: Redis;
  let subscriberA: Redis;
  let subscriberB: Redis;
  let prefix: string;
  let keys: KeySpace;
  const started: Replica[] = [];
  beforeAll(() => {
    raw = createTestRedis();
    subscriberA = createTestRedis();
    subscriberB = createTestRedis();
  });
  afterEach(async () => {
    for (const replica of started.splice(0)) await replica.lifecycle.beforeApplicationShutdown();
    await cleanupPrefix(raw, prefix);
  });
  afterAll(() => {
    raw.disconnect();
    subscriberA.disconnect();
    subscriberB.disconnect();
  });

  async function replica(subscriber: Redis, declared: boolean): Promise<Replica> {
    const registry = new Freezable(raw, keys);
    const marker = new MarkerThen(raw, keys);
    const one = await startStubbedLifecycle({
      raw,
      subscriber,
      registry,
      marker,
      streams: declared ? [{ stream: 'orders', shards: 2 }] : [],
    });
    const r = { ...one, registry, marker };
    started.push(r);
    return r;
  }

  /**
   * A (declares `orders:2`) and B start; then `orders` is resharded 2 → 4 (shards 2…5, routing
   * epoch 2, the old shards removed), which B sees and A misses.
   */
  async function twoReplicasOneMissedAReshard(): Promise<{ a: Replica; b: Replica }> {
    prefix = uniquePrefix('two-replica-loss');
    keys = new KeySpace(prefix);
    const a = await replica(subscriberA, true);
    const b = await replica(subscriberB, false);
    const before = a.registry.get('orders')!;
    expect(b.registry.get('orders')?.version).toBe(before.version);
    a.registry.frozen = true;
    const now = Date.now();
    const ids = [2, 3, 4, 5];
    const after: StreamRecord = {
      ...before,
      routingEpoch: 2,
      nextShardId: 6,
      shards: ids.map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
      routing: routingFunctionFor(ids),
    };
    expect(await new ShardDataPlane(raw, keys).open('orders', ids)).toEqual([]);
    expect(await b.registry.write(withNextVersion(before, after), before.version, [])).toBe(true);
    await Promise.all([0, 1].map((id) => new ShardDataPlane(raw, keys).remove('orders', id)));
    expect(b.registry.get('orders')?.routingEpoch).toBe(2);
    expect(a.registry.get('orders')?.routingEpoch).toBe(1);
    a.registry.frozen = false;
    return { a, b };
  }

  /** Ids of `orders` shards whose meta hash has a `state` of `open`. */
  async function openShards(): Promise<number[]> {
    const metas = (await raw.keys(`${prefix}:*`)).filter((k) => k.endsWith(':meta'));
    const open: number[] = [];
    for (let id = 0; id < 8; id++) {
      const meta = shardMetaKey(keys.shardKey('orders', id));
      if (metas.includes(meta) && (await raw.hget(meta, 'state')) === 'open') open.push(id);
    }
    return open;
  }

  async function stored(): Promise<StreamRecord> {
    const reader = new StreamRegistry(raw, keys);
    await reader.refresh();
    return reader.get('orders')!;
  }

  it('B, with the newer memory, restores first: A keeps it, noticing the loss at its next check', async () => {
    const { a, b } = await twoReplicasOneMissedAReshard();
    // the loss lands right after A's marker check; B notices and restores before A goes on
    a.marker.after = async () => {
      await cleanupPrefix(raw, prefix);
      await b.check();
    };
    await a.check();
    const record = await stored();
    expect(record.routingEpoch).toBe(3);
    expect(activeShardIds(record)).toEqual([2, 3, 4, 5]);
    expect(await openShards()).toEqual([2, 3, 4, 5]);
    expect(b.watcher.status.losses).toBe(1);
    expect(b.watcher.status.restoredStreams).toEqual(['orders']);
    // A's STREAMS check found orders there (B's): A notices the loss at its next marker check
    expect(a.watcher.status.losses).toBe(0);
    await a.check();
    expect(a.watcher.status.losses).toBe(1);
    expect((await stored()).version).toBe(record.version);
    expect(await openShards()).toEqual([2, 3, 4, 5]);
    expect(
      a.warnings.concat(b.warnings).filter((w) => w.includes('behind what this replica saw')),
    ).toEqual([]);
    await Promise.all([a.check(), b.check()]);
    expect((await stored()).version).toBe(record.version);
    expect([a.watcher.status.losses, b.watcher.status.losses]).toEqual([1, 1]);
  });

  it('A, with the older memory, restores first: B keeps it and warns that it is older than its own', async () => {
    const { a, b } = await twoReplicasOneMissedAReshard();
    a.marker.after = () => cleanupPrefix(raw, prefix);
    await a.check(); // A: through STREAMS, restores 0…1 at epoch 2
    await b.check(); // B: through its marker (A wrote a new one), finds A's record
    const record = await stored();
    expect(record.routingEpoch).toBe(2);
    expect(activeShardIds(record)).toEqual([0, 1]);
    expect(await openShards()).toEqual([0, 1]);
    expect([a.watcher.status.losses, b.watcher.status.losses]).toEqual([1, 1]);
    expect(b.watcher.status.restoredStreams).toEqual([]);
    expect(b.warnings).toHaveLength(1);
    expect(b.warnings[0]).toContain(
      'orders is stored with routing epoch 2 (2 shard(s)), behind what this replica saw (routing epoch 2, 4 shard(s))',
    );
    await Promise.all([a.check(), b.check()]);
    expect((await stored()).version).toBe(record.version);
    expect(b.warnings).toHaveLength(1);
  });

  it('a replica started after the loss creates it from STREAMS first: B keeps it and warns once', async () => {
    const { b } = await twoReplicasOneMissedAReshard();
    await cleanupPrefix(raw, prefix);
    const lateSubscriber = createTestRedis();
    const late = await replica(lateSubscriber, true); // never saw orders: epoch 1, 2 shards
    try {
      expect(late.registry.get('orders')?.routingEpoch).toBe(1);
      await b.check();
      const record = await stored();
      expect(record.routingEpoch).toBe(1);
      expect(await openShards()).toEqual([0, 1]);
      expect(b.watcher.status.losses).toBe(1);
      expect(b.warnings).toHaveLength(1);
      expect(b.warnings[0]).toContain(
        'orders is stored with routing epoch 1 (2 shard(s)), behind what this replica saw (routing epoch 2, 4 shard(s))',
      );
      expect(b.warnings[0]).toContain('the reshard route changes its shard count');
      await b.check();
      await b.registry.refresh();
      expect(b.warnings).toHaveLength(1);
    } finally {
      await late.lifecycle.beforeApplicationShutdown();
      started.splice(started.indexOf(late), 1);
      lateSubscriber.disconnect();
    }
  });

  it('both notice at once: one record is kept, and only its shards are open', async () => {
    const { a, b } = await twoReplicasOneMissedAReshard();
    await cleanupPrefix(raw, prefix);
    await Promise.all([a.check(), b.check()]);
    const record = await stored();
    expect(await openShards()).toEqual(activeShardIds(record));
    expect([a.watcher.status.losses, b.watcher.status.losses]).toEqual([1, 1]);
    expect(a.errors.concat(b.errors).filter((e) => !e.startsWith('Redis lost its data'))).toEqual(
      [],
    );
  });
});
