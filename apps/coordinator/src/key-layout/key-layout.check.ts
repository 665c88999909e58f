import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { untilRedisAnswers } from '../redis/redis-startup.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { KEY_SPACE } from '../store/store.tokens.js';
import { KeyLayoutMigration } from './key-layout-migration.js';
import { LegacyKeyLayoutError } from './legacy-key-layout.error.js';

/**
 * Refuses to start a coordinator on a Redis whose control plane is still in the old key layout:
 * it would see an empty catalog and no groups, declare `STREAMS` afresh and strand every group.
 * Runs at module init, before anything is read or written; waits for a Redis that does not
 * answer yet (up to `REDIS_STARTUP_TIMEOUT_MS`).
 */
@Injectable()
export class KeyLayoutCheck implements OnModuleInit {
  private readonly logger = new Logger('Redis');

  constructor(
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(KEY_SPACE) private readonly keys: KeySpace,
  ) {}

  async onModuleInit(): Promise<void> {
    const migration = new KeyLayoutMigration(this.redis, this.keys);
    const found = await untilRedisAnswers('key layout check', () => migration.legacyMarkers(), {
      timeoutMs: this.config.redisStartupTimeoutMs,
      warn: (message) => this.logger.warn(message),
    });
    if (found.length > 0) throw new LegacyKeyLayoutError(found);
  }
}
