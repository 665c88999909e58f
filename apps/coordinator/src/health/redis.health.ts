import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import {
  type RedisConnection,
  pingRedis,
  unreachableReason,
  withTimeout,
} from '@redis-stream-coordinator/nestjs/internal';
import { KEY_SPACE } from '../store/store.tokens.js';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import { EvictionPolicyCheck } from './eviction-policy.js';
import { REDIS_DATA_LOSS } from '../groups/groups.tokens.js';
import type { RedisDataLossWatcher } from '../groups/redis-data-loss.js';

/**
 * Redis health for readiness: reachable (PING) and writable (a short-lived write under the
 * coordinator's prefix, so a read-only replica after a failover shows as `down`). Returns `down`
 * with the reason; never throws.
 */
@Injectable()
export class RedisHealthIndicator {
  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(KEY_SPACE) private readonly keys: KeySpace,
    private readonly eviction: EvictionPolicyCheck,
    @Inject(REDIS_DATA_LOSS) private readonly dataLoss: RedisDataLossWatcher,
  ) {}

  /**
   * Up (the coordinator restored what it could); once Redis lost its data, with how often, when
   * last and which streams were created again (docs/protocol.md §13.6).
   */
  dataLosses(key: string): HealthIndicatorResult<typeof key> {
    const indicator = this.health.check(key);
    const status = this.dataLoss.status;
    if (status.losses === 0) return indicator.up();
    return indicator.up({
      losses: status.losses,
      lastDetectedAt: new Date(status.lastDetectedAt ?? 0).toISOString(),
      restoredStreams: status.restoredStreams,
      warning:
        'Redis lost its data: the catalog was restored, but messages, acks, group state and event logs are gone (docs/operations.md, "Redis lost data")',
    });
  }

  /** Up when PING answers; with the eviction warning in its details when Redis may evict keys. */
  async isReachable(key: string): Promise<HealthIndicatorResult<typeof key>> {
    const indicator = this.health.check(key);
    try {
      await pingRedis(this.redis, 1000);
      const { maxmemoryPolicy, warning } = await this.eviction.check();
      return warning ? indicator.up({ maxmemoryPolicy, warning }) : indicator.up();
    } catch (error) {
      return indicator.down({ reason: unreachableReason(error) });
    }
  }

  async isWritable(key: string): Promise<HealthIndicatorResult<typeof key>> {
    const indicator = this.health.check(key);
    try {
      await withTimeout(
        this.redis.set(this.keys.readinessProbeKey(), String(Date.now()), 'PX', 10_000),
        1000,
        'write',
      );
      return indicator.up();
    } catch (error) {
      return indicator.down({
        reason: `Redis not writable: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }
}
