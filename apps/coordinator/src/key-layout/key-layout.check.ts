import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { KEY_SPACE } from '../store/store.tokens.js';
import { KeyLayoutMigration } from './key-layout-migration.js';
import { LegacyKeyLayoutError } from './legacy-key-layout.error.js';

/**
 * Refuses to start a coordinator on a Redis whose control plane is still in the old key layout:
 * it would see an empty catalog and no groups, declare `STREAMS` afresh and strand every group.
 * Runs at module init, before anything is read or written.
 */
@Injectable()
export class KeyLayoutCheck implements OnModuleInit {
  constructor(
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(KEY_SPACE) private readonly keys: KeySpace,
  ) {}

  async onModuleInit(): Promise<void> {
    const found = await new KeyLayoutMigration(this.redis, this.keys).legacyMarkers();
    if (found.length > 0) throw new LegacyKeyLayoutError(found);
  }
}
