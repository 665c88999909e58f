import type { Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { CoordinatorConfig } from '../../../apps/coordinator/src/config/coordinator-config.js';
import { CoordinatorLifecycle } from '../../../apps/coordinator/src/groups/coordinator-lifecycle.js';
import type { GroupCoordinator } from '../../../apps/coordinator/src/groups/group-coordinator.js';
import { RedisDataLossWatcher } from '../../../apps/coordinator/src/groups/redis-data-loss.js';
import type { SessionTimers } from '../../../apps/coordinator/src/groups/session-timers.js';
import { IncarnationMarker } from '../../../apps/coordinator/src/store/incarnation-marker.js';
import { StreamRegistry } from '../../../apps/coordinator/src/store/stream-registry.js';
import { cleanupPrefix } from '../../support/redis.js';

/** A marker whose next check is followed by `after` (Redis losing data right after it). */
export class MarkerThen extends IncarnationMarker {
  after: (() => Promise<void>) | null = null;
  override async lostSinceLastCheck(): Promise<boolean> {
    const lost = await super.lostSinceLastCheck();
    const after = this.after;
    this.after = null;
    if (after) await after();
    return lost;
  }
}

/** A registry whose first load is followed by Redis losing every key of the prefix. */
export class LosingAfterFirstLoad extends StreamRegistry {
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

export interface StubbedLifecycleOptions {
  readonly raw: Redis;
  readonly subscriber: Redis;
  readonly registry: StreamRegistry;
  readonly marker: IncarnationMarker;
  /** The coordinator's `STREAMS` declaration. */
  readonly streams: CoordinatorConfig['streams'];
}

/** A started lifecycle and what it reported; `check()` runs one periodic Redis-data check. */
export interface StubbedLifecycle {
  readonly lifecycle: CoordinatorLifecycle;
  readonly watcher: RedisDataLossWatcher;
  readonly warnings: string[];
  readonly errors: string[];
  readonly check: () => Promise<void>;
}

/**
 * The real `CoordinatorLifecycle` and `RedisDataLossWatcher` on real Redis, with the group
 * coordinator, session timers and config stubbed: what the Redis-data checks (the marker, the
 * catalog, `STREAMS`) do, without an HTTP app. The caller stops it with
 * `lifecycle.beforeApplicationShutdown()`.
 */
export async function startStubbedLifecycle(
  options: StubbedLifecycleOptions,
): Promise<StubbedLifecycle> {
  const warnings: string[] = [];
  const errors: string[] = [];
  const watcher = new RedisDataLossWatcher(options.marker, options.registry, {
    dropCache: () => undefined,
    counted: () => undefined,
    error: (m) => void errors.push(m),
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
  const config = {
    streams: options.streams,
    heartbeatIntervalMs: 60_000,
  } as unknown as CoordinatorConfig;
  const lifecycle = new CoordinatorLifecycle(
    config,
    options.raw,
    options.subscriber,
    options.registry,
    coordinator,
    timers,
    watcher,
  );
  try {
    await lifecycle.start({ timeoutMs: 5000, warn: (m) => void warnings.push(m) });
  } catch (error) {
    await lifecycle.beforeApplicationShutdown();
    throw error;
  }
  const check = () =>
    (lifecycle as unknown as { checkRedisData(): Promise<void> }).checkRedisData();
  return { lifecycle, watcher, warnings, errors, check };
}
