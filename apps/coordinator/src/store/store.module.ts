import { Logger, Module } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import { GroupStore } from './group-store.js';
import { RedisClock } from './redis-clock.js';
import { GROUP_STORE, KEY_SPACE, REDIS_CLOCK, STREAM_REGISTRY } from './store.tokens.js';
import { StreamRegistry } from './stream-registry.js';

/**
 * The persisted state every feature reads: the key space, the group store, the stream catalog and
 * the Redis clock. Shared by the group protocol and the stream routes, so neither owns it.
 */
@Module({
  providers: [
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
      useFactory: (redis: RedisConnection, keys: KeySpace) =>
        new StreamRegistry(redis, keys, new Logger(StreamRegistry.name)),
    },
  ],
  exports: [KEY_SPACE, REDIS_CLOCK, GROUP_STORE, STREAM_REGISTRY],
})
export class StoreModule {}
