import { Logger, Module } from '@nestjs/common';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { DeadLetterService, type RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import type { GroupCoordinator } from '../groups/group-coordinator.js';
import { GroupsModule } from '../groups/groups.module.js';
import { GROUP_COORDINATOR } from '../groups/groups.tokens.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { GroupStore } from '../store/group-store.js';
import type { RedisClock } from '../store/redis-clock.js';
import { ShardDataPlane } from '../store/shard-data-plane.js';
import { ReshardDriver } from './reshard-driver.js';
import { CoordinatorReshardGroups } from './reshard-groups.js';
import { ReshardLifecycle } from './reshard-lifecycle.js';
import { StoreModule } from '../store/store.module.js';
import { GROUP_STORE, KEY_SPACE, REDIS_CLOCK, STREAM_REGISTRY } from '../store/store.tokens.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import { StreamsController } from './streams.controller.js';
import { DeadLettersController } from './dead-letters.controller.js';
import { DEAD_LETTER_SERVICE, RESHARD_DRIVER } from './streams.tokens.js';

/**
 * The stream routes of docs/protocol.md §8–§9 (creation, routing, resharding), the reshard
 * driver, and the dead-letter routes of docs/protocol.md §16.
 */
@Module({
  imports: [StoreModule, GroupsModule],
  controllers: [StreamsController, DeadLettersController],
  providers: [
    ReshardLifecycle,
    {
      provide: DEAD_LETTER_SERVICE,
      inject: [STREAM_REGISTRY, COORDINATOR_REDIS, COORDINATOR_CONFIG],
      useFactory: (registry: StreamRegistry, redis: RedisConnection, config: CoordinatorConfig) =>
        new DeadLetterService({
          connection: redis,
          keyPrefix: config.keyPrefix,
          // Replays route through the catalog as it is now (refreshed), like GET /v1/streams/{s}.
          routing: {
            fetchRouting: async (stream: string) => {
              await registry.refresh();
              const record = registry.get(stream);
              if (!record) throw new Error(`stream "${stream}" does not exist`);
              return registry.routing(record);
            },
          },
        }),
    },
    {
      provide: RESHARD_DRIVER,
      inject: [
        STREAM_REGISTRY,
        COORDINATOR_REDIS,
        KEY_SPACE,
        GROUP_COORDINATOR,
        GROUP_STORE,
        REDIS_CLOCK,
        COORDINATOR_CONFIG,
      ],
      useFactory: (
        registry: StreamRegistry,
        redis: RedisConnection,
        keys: KeySpace,
        coordinator: GroupCoordinator,
        store: GroupStore,
        clock: RedisClock,
        config: CoordinatorConfig,
      ) =>
        new ReshardDriver(
          registry,
          new ShardDataPlane(redis, keys),
          new CoordinatorReshardGroups(coordinator, store),
          clock,
          {
            pollMs: config.reshardPollMs,
            idleNoticeMs: config.reshardIdleGroupGraceMs,
            maxShards: config.maxShards,
          },
          new Logger('Reshard'),
        ),
    },
  ],
  exports: [RESHARD_DRIVER, ReshardLifecycle],
})
export class StreamsModule {}
