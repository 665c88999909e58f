import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import {
  createRedisConnection,
  type RedisConnection,
  closeConnection,
} from '@redis-stream-coordinator/nestjs/internal';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { COORDINATOR_REDIS, COORDINATOR_REDIS_SUBSCRIBER } from './redis.tokens.js';

const logger = new Logger('Redis');

/**
 * The coordinator's Redis connections (standalone or Cluster, from `REDIS_URL`): one for
 * commands, one for pub/sub. Both are closed last, on application shutdown, with the library's
 * `closeConnection`: a `QUIT` bounded in time when ready, a disconnect otherwise.
 */
@Global()
@Module({
  providers: [
    {
      provide: COORDINATOR_REDIS,
      inject: [COORDINATOR_CONFIG],
      useFactory: (config: CoordinatorConfig): RedisConnection =>
        // A command fails after one reconnect attempt, so a request during an outage gets its
        // 503 COORDINATOR_NOT_AVAILABLE within about two seconds instead of hanging.
        createRedisConnection(config.redisUrl, 'command', {
          connectionName: 'rsc-coordinator',
          logger,
          maxRetriesPerRequest: 1,
        }),
    },
    {
      provide: COORDINATOR_REDIS_SUBSCRIBER,
      inject: [COORDINATOR_CONFIG],
      useFactory: (config: CoordinatorConfig): RedisConnection =>
        createRedisConnection(config.redisUrl, 'subscriber', {
          connectionName: 'rsc-coordinator-sub',
          logger,
        }),
    },
  ],
  exports: [COORDINATOR_REDIS, COORDINATOR_REDIS_SUBSCRIBER],
})
export class CoordinatorRedisModule implements OnApplicationShutdown {
  constructor(
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(COORDINATOR_REDIS_SUBSCRIBER) private readonly subscriber: RedisConnection,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled([closeConnection(this.redis), closeConnection(this.subscriber)]);
  }
}
