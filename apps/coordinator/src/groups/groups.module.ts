import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { Logger } from '@nestjs/common';
import { AssignorRegistry } from '../assignor-plugins/assignor.registry.js';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import type { GroupCoordinatorObserver } from '../core/group-coordinator-observer.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import { FenceWriter } from '../store/fence-writer.js';
import type { GroupStore } from '../store/group-store.js';
import type { RedisClock } from '../store/redis-clock.js';
import { StoreModule } from '../store/store.module.js';
import { GROUP_STORE, KEY_SPACE, REDIS_CLOCK, STREAM_REGISTRY } from '../store/store.tokens.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import { AssignorFallbackLog } from './assignor-fallback-log.js';
import { CoordinatorLifecycle } from './coordinator-lifecycle.js';
import { GroupCoordinator } from './group-coordinator.js';
import { GroupsController } from './groups.controller.js';
import { GROUP_COORDINATOR, REDIS_DATA_LOSS, SESSION_TIMERS } from './groups.tokens.js';
import { NudgePublisher } from './nudge-publisher.js';
import { SessionTimers } from './session-timers.js';
import { GroupIndexRepair } from './group-index-repair.js';
import { COORDINATOR_METRICS_OBSERVER } from '../metrics/metrics.tokens.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { KeyLayoutCheck } from '../key-layout/key-layout.check.js';
import { CoordinatorMetrics } from '../metrics/coordinator-metrics.js';
import { IncarnationMarker } from '../store/incarnation-marker.js';
import { RedisDataLossWatcher } from './redis-data-loss.js';

/**
 * The group protocol: the pure core wired to the store, the HTTP routes of
 * `docs/protocol.md §3, §6`, and the background timers (the stream routes are in
 * `StreamsModule`). Re-exports `StoreModule` so the modules that import this one see the key
 * space, store, catalog and clock.
 */
@Module({
  imports: [DiscoveryModule, MetricsModule, StoreModule],
  controllers: [GroupsController],
  providers: [
    AssignorRegistry,
    KeyLayoutCheck,
    CoordinatorLifecycle,
    {
      provide: GROUP_COORDINATOR,
      inject: [
        GROUP_STORE,
        STREAM_REGISTRY,
        COORDINATOR_REDIS,
        KEY_SPACE,
        COORDINATOR_CONFIG,
        AssignorRegistry,
        REDIS_CLOCK,
        COORDINATOR_METRICS_OBSERVER,
      ],
      useFactory: (
        store: GroupStore,
        registry: StreamRegistry,
        redis: RedisConnection,
        keys: KeySpace,
        c: CoordinatorConfig,
        assignors: AssignorRegistry,
        clock: RedisClock,
        observer: GroupCoordinatorObserver,
      ) =>
        new GroupCoordinator(
          store,
          registry,
          new FenceWriter(redis),
          new NudgePublisher(redis, keys),
          {
            heartbeatIntervalMs: c.heartbeatIntervalMs,
            sessionTimeoutMs: c.sessionTimeoutMs,
            groupMaxSize: c.groupMaxSize,
            maxGroups: c.maxGroups,
            defaultAssignor: c.defaultAssignor,
            assignors: assignors.assignors,
          },
          clock,
          new AssignorFallbackLog(observer, new Logger('Assignor')),
        ),
    },
    {
      provide: REDIS_DATA_LOSS,
      inject: [
        COORDINATOR_REDIS,
        KEY_SPACE,
        STREAM_REGISTRY,
        GROUP_COORDINATOR,
        CoordinatorMetrics,
      ],
      useFactory: (
        redis: RedisConnection,
        keys: KeySpace,
        registry: StreamRegistry,
        coordinator: GroupCoordinator,
        metrics: CoordinatorMetrics,
      ) => {
        const logger = new Logger('Redis');
        return new RedisDataLossWatcher(new IncarnationMarker(redis, keys), registry, {
          dropCache: () => coordinator.dropCache(),
          counted: () => metrics.redisDataLosses.inc(),
          error: (message) => logger.error(message),
          warn: (message) => logger.warn(message),
          now: () => coordinator.clock.now(),
        });
      },
    },
    {
      provide: SESSION_TIMERS,
      inject: [GROUP_STORE, GROUP_COORDINATOR, COORDINATOR_CONFIG, COORDINATOR_REDIS, KEY_SPACE],
      useFactory: (
        store: GroupStore,
        coordinator: GroupCoordinator,
        c: CoordinatorConfig,
        redis: RedisConnection,
        keys: KeySpace,
      ) => {
        const logger = new Logger('SessionTimers');
        return new SessionTimers(
          store,
          coordinator,
          Math.max(20, Math.min(250, Math.floor(c.sessionTimeoutMs / 10))),
          logger,
          {
            repair: new GroupIndexRepair(redis, keys, store, logger),
            intervalMs: c.groupIndexRepairMs,
          },
        );
      },
    },
  ],
  exports: [GROUP_COORDINATOR, REDIS_DATA_LOSS, KeyLayoutCheck, CoordinatorLifecycle, StoreModule],
})
export class GroupsModule {}
