import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { IncarnationMarker } from '../../apps/coordinator/src/store/incarnation-marker.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../support/redis.js';
import { LosingAfterFirstLoad, startStubbedLifecycle } from './support/stubbed-lifecycle.js';

/**
 * Redis loses its data while a coordinator starts, between its catalog load and the incarnation
 * marker step (a Redis without persistence restarting while the start-up retries): the loss is
 * detected at the first check and the streams of the loaded catalog are restored
 * (docs/protocol.md §13.6), instead of the coordinator adopting a fresh marker over the loss.
 */
describe('Redis lost its data during the start-up', () => {
  const prefix = uniquePrefix('start-loss');
  let raw: Redis;
  let subscriber: Redis;
  beforeAll(() => {
    raw = createTestRedis();
    subscriber = createTestRedis();
  });
  afterAll(async () => {
    await cleanupPrefix(raw, prefix);
    raw.disconnect();
    subscriber.disconnect();
  });

  it('is detected at the first check and the catalog loaded before it is restored', async () => {
    const keys = new KeySpace(prefix);
    await new StreamRegistry(raw, keys).create('audit', 3, Date.now());
    const registry = new LosingAfterFirstLoad(raw, keys, prefix);
    const { lifecycle, watcher, warnings, check } = await startStubbedLifecycle({
      raw,
      subscriber,
      registry,
      marker: new IncarnationMarker(raw, keys),
      streams: [],
    });
    try {
      await check();
      expect(watcher.status.losses).toBe(1);
      expect(watcher.status.restoredStreams).toEqual(['audit']);
      expect(await registry.missing(['audit'])).toEqual([]);
      expect(warnings).toEqual([]);
    } finally {
      await lifecycle.beforeApplicationShutdown();
    }
  });
});
