import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { CoordinatorConfig } from '../../apps/coordinator/src/config/coordinator-config.js';
import { CoordinatorLifecycle } from '../../apps/coordinator/src/groups/coordinator-lifecycle.js';
import type { GroupCoordinator } from '../../apps/coordinator/src/groups/group-coordinator.js';
import { RedisDataLossWatcher } from '../../apps/coordinator/src/groups/redis-data-loss.js';
import type { SessionTimers } from '../../apps/coordinator/src/groups/session-timers.js';
import { IncarnationMarker } from '../../apps/coordinator/src/store/incarnation-marker.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../support/redis.js';

/** A registry whose first load is followed by Redis losing every key of the prefix. */
class LosingAfterFirstLoad extends StreamRegistry {
  private lost = false;
  constructor(
    private readonly raw: Redis,
    keys: KeySpace,
    private readonly prefix: string,
  ) {
    super(raw, keys);
  }
  override async refresh(): Promise<void> {
    await super.refresh();
    if (this.lost) return;
    this.lost = true;
    await cleanupPrefix(this.raw, this.prefix);
  }
}

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
    const marker = new IncarnationMarker(raw, keys);
    const warnings: string[] = [];
    const watcher = new RedisDataLossWatcher(marker, registry, {
      dropCache: () => undefined,
      counted: () => undefined,
      error: () => undefined,
      warn: (m) => void warnings.push(m),
      now: () => Date.now(),
    });
    const coordinator = {
      clock: { now: () => Date.now() },
      dropCache: () => undefined,
      cachedGroups: () => new Map(),
    } as unknown as GroupCoordinator;
    const timers = {
      start: () => undefined,
      stop: () => Promise.resolve(),
      restartClock: () => undefined,
    } as unknown as SessionTimers;
    const config = { streams: [], heartbeatIntervalMs: 60_000 } as unknown as CoordinatorConfig;
    const lifecycle = new CoordinatorLifecycle(
      config,
      raw,
      subscriber,
      registry,
      coordinator,
      timers,
      watcher,
    );
    try {
      await lifecycle.start({ timeoutMs: 5000, warn: (m) => void warnings.push(m) });
      await (lifecycle as unknown as { checkRedisData(): Promise<void> }).checkRedisData();
      expect(watcher.status.losses).toBe(1);
      expect(watcher.status.restoredStreams).toEqual(['audit']);
      expect(await registry.missing(['audit'])).toEqual([]);
      expect(warnings).toEqual([]);
    } finally {
      await lifecycle.beforeApplicationShutdown();
    }
  });
});
