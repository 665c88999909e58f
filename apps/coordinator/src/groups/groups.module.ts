import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import { Logger } from '@nestjs/common';
import { AssignorRegistry } from '../assignors/assignor.registry.js';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import { FenceWriter } from '../store/fence-writer.js';
import { GroupStore } from '../store/group-store.js';
import { StreamRegistry } from '../streams/stream-registry.js';
import { REDIS_CLOCK } from '../streams/streams.tokens.js';
import { AssignorFallbackLog } from './assignor-fallback-log.js';
import { CoordinatorLifecycle } from './coordinator-lifecycle.js';
import { GroupCoordinator } from './group-coordinator.js';
import { GroupsController } from './groups.controller.js';
import {
  GROUP_COORDINATOR,
  GROUP_STORE,
  KEY_SPACE,
  SESSION_TIMERS,
  STREAM_REGISTRY,
} from './groups.tokens.js';
import { NudgePublisher } from './nudge-publisher.js';
import { RedisClock } from './redis-clock.js';
import { SessionTimers } from './session-timers.js';
import { GroupIndexRepair } from './group-index-repair.js';
import { COORDINATOR_METRICS_OBSERVER } from '../metrics/metrics.tokens.js';
import type { GroupCoordinatorObserver } from './group-coordinator.js';
import { MetricsModule } from '../metrics/metrics.module.js';
import { KeyLayoutCheck } from '../key-layout/key-layout.check.js';

/**
 * The group protocol and stream catalog: the pure core wired to Redis, the HTTP routes of
 * docs/protocol.md §3 and §6, and the background timers (the stream routes are in `StreamsModule`).
 */
@Module({
  imports: [DiscoveryModule, MetricsModule],
  controllers: [GroupsController],
  providers: [
    AssignorRegistry,
    KeyLayoutCheck,
    CoordinatorLifecycle,
    {
      provide: KEY_SPACE,
      inject: [COORDINATOR_CONFIG],
      useFactory: (c: CoordinatorConfig) => new KeySpace(c.keyPrefix),
    },
    { provide: REDIS_CLOCK, useFactory: () => new RedisClock() },
    {
      provide: GROUP_STORE,
      inject: [COORDINATOR_REDIS, KEY_SPACE, COORDINATOR_CONFIG],
      useFactory: (redis: RedisConnection, keys: KeySpace, c: CoordinatorConfig) =>
        new GroupStore(redis, keys, { maxLen: c.eventLogMaxLen, maxAgeMs: c.eventLogMaxAgeMs }),
    },
    {
      provide: STREAM_REGISTRY,
      inject: [COORDINATOR_REDIS, KEY_SPACE],
      useFactory: (redis: RedisConnection, keys: KeySpace) => new StreamRegistry(redis, keys),
    },
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
            defaultAssignor: c.defaultAssignor,
            assignors: assignors.assignors,
          },
          clock,
          new AssignorFallbackLog(observer, new Logger('Assignor')),
        ),
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
  exports: [GROUP_COORDINATOR, STREAM_REGISTRY, GROUP_STORE, KEY_SPACE, REDIS_CLOCK],
})
export class GroupsModule {}
