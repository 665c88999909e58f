import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { CoordinatorLifecycle } from '../../apps/coordinator/src/groups/coordinator-lifecycle.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../support/redis.js';
import {
  LosingAfterFirstLoad,
  MarkerThen,
  startStubbedLifecycle,
} from './support/stubbed-lifecycle.js';

/**
 * A declared stream (`STREAMS`) Redis lost comes back under the next routing epoch, as every
 * stream of the catalog does (docs/protocol.md §13.6) — never created afresh at epoch 1, which
 * would take a resharded stream back to its declared layout and its routing epoch backwards.
 * Found in a full-suite run (redis-data-loss.e2e-spec.ts: `orders` back at epoch 1): the
 * FLUSHALL landed between the lifecycle's marker check and its STREAMS check.
 */
describe('a declared stream Redis lost', () => {
  let raw: Redis;
  let subscriber: Redis;
  let prefix: string;
  let lifecycle: CoordinatorLifecycle | undefined;
  beforeAll(() => {
    raw = createTestRedis();
    subscriber = createTestRedis();
  });
  afterEach(async () => {
    await lifecycle?.beforeApplicationShutdown();
    lifecycle = undefined;
    await cleanupPrefix(raw, prefix);
  });
  afterAll(() => {
    raw.disconnect();
    subscriber.disconnect();
  });

  async function start(before?: (keys: KeySpace) => Promise<StreamRegistry>) {
    prefix = uniquePrefix('declared-loss');
    const keys = new KeySpace(prefix);
    const registry = before ? await before(keys) : new StreamRegistry(raw, keys);
    const marker = new MarkerThen(raw, keys);
    const started = await startStubbedLifecycle({
      raw,
      subscriber,
      registry,
      marker,
      streams: [{ stream: 'orders', shards: 2 }],
    });
    lifecycle = started.lifecycle;
    return { keys, registry, marker, ...started };
  }

  it('lost right after the marker check: detected as the loss it is, restored at the next epoch', async () => {
    const { registry, marker, watcher, check } = await start();
    expect(registry.get('orders')?.routingEpoch).toBe(1);
    marker.after = () => cleanupPrefix(raw, prefix);
    await check();
    await registry.refresh();
    expect(registry.get('orders')?.routingEpoch).toBe(2);
    expect(watcher.status.losses).toBe(1);
    expect(watcher.status.restoredStreams).toEqual(['orders']);
    // a further check changes nothing
    await check();
    await registry.refresh();
    expect(registry.get('orders')?.routingEpoch).toBe(2);
    expect(watcher.status.losses).toBe(1);
  });

  it('lost while the start-up declares it: restored at the next epoch, not created', async () => {
    // the stream exists (epoch 1), the coordinator loads the catalog, then Redis loses everything
    // before the STREAMS declaration step
    const { registry, watcher } = await start(async (keys) => {
      await new StreamRegistry(raw, keys).create('orders', 2, Date.now());
      return new LosingAfterFirstLoad(raw, keys, prefix);
    });
    await registry.refresh();
    expect(registry.get('orders')?.routingEpoch).toBe(2);
    expect(watcher.status.losses).toBe(1);
    expect(watcher.status.restoredStreams).toEqual(['orders']);
  });

  it('lost alone (the marker kept, as an eviction may): restored at the next epoch, not created', async () => {
    const { keys, registry, watcher, warnings, check } = await start();
    await raw.del(keys.streamsKey(), keys.catalogVersionKey(), keys.streamEventsKey('orders'));
    await check();
    await registry.refresh();
    const record = registry.get('orders');
    expect(record?.routingEpoch).toBe(2);
    expect(record?.shards.map((s) => s.id)).toEqual([0, 1]);
    expect(watcher.status.losses).toBe(0);
    expect(warnings).toEqual([]);
    const events = await registry.events('orders');
    expect(events.map((e) => [e.type, e.data.reason, e.data.routingEpoch])).toEqual([
      ['STREAM_CREATED', 'REDIS_DATA_LOST', 2],
    ]);
  });
});
