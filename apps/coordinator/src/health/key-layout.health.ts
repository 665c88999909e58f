import { Inject, Injectable, Logger } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { type RedisConnection, withTimeout } from '@redis-stream-coordinator/nestjs/internal';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { KEY_SPACE } from '../store/store.tokens.js';
import { KeyLayoutMigration } from '../key-layout/key-layout-migration.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';

/**
 * Readiness: no coordinator of the old key layout writes under this prefix. The start-up check
 * (`KeyLayoutCheck`) sees only what exists when a replica starts; an old replica started after
 * the move re-declares `STREAMS` in the old catalog and runs a second control plane over the same
 * shards. Each probe looks for the old catalog again and reports `down` (and logs it once) while
 * it is there. Never throws.
 */
@Injectable()
export class KeyLayoutHealthIndicator {
  private readonly logger = new Logger('KeyLayout');
  private readonly migration: KeyLayoutMigration;
  private reported = false;

  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(COORDINATOR_REDIS) redis: RedisConnection,
    @Inject(KEY_SPACE) keys: KeySpace,
  ) {
    this.migration = new KeyLayoutMigration(redis, keys);
  }

  async isCurrent(key: string): Promise<HealthIndicatorResult<typeof key>> {
    const indicator = this.health.check(key);
    let found: string[];
    try {
      found = await withTimeout(this.migration.legacyMarkers(), 1000, 'key layout check');
    } catch (error) {
      return indicator.down({
        reason: `key layout not checked: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
    if (found.length === 0) {
      this.reported = false;
      return indicator.up();
    }
    const reason =
      `Redis holds coordinator state in the old key layout again (${found.join(', ')}): a ` +
      'coordinator of an older version runs on this KEY_PREFIX. Stop it, then run migrate-keys ' +
      '(docs/operations.md, "Moving to the current key layout").';
    if (!this.reported) this.logger.error(reason);
    this.reported = true;
    return indicator.down({ reason });
  }
}
