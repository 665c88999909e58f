import { Inject, Injectable } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { type StartupRetryOptions, untilRedisAnswers } from '../redis/redis-startup.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { KEY_SPACE } from '../store/store.tokens.js';
import { KeyLayoutMigration } from './key-layout-migration.js';
import { LegacyKeyLayoutError } from './legacy-key-layout.error.js';

/**
 * Refuses to start a coordinator on a Redis whose control plane is still in the old key layout:
 * it would see an empty catalog and no groups, declare `STREAMS` afresh and strand every group.
 * The first step of the start-up, before anything is read or written; waits for a Redis that does
 * not answer yet (as `retry` says).
 */
@Injectable()
export class KeyLayoutCheck {
  constructor(
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(KEY_SPACE) private readonly keys: KeySpace,
  ) {}

  /** Throws {@link LegacyKeyLayoutError} when the old layout is found. */
  async run(retry: StartupRetryOptions): Promise<void> {
    const migration = new KeyLayoutMigration(this.redis, this.keys);
    const found = await untilRedisAnswers(
      'key layout check',
      () => migration.legacyMarkers(),
      retry,
    );
    if (found.length > 0) throw new LegacyKeyLayoutError(found);
  }
}
