import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import { Cluster, type Redis } from 'ioredis';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';

/** What Redis's eviction setting means for the coordinator: nothing to say, or a warning. */
export interface EvictionPolicyStatus {
  /** The policy of the first server that evicts, else `noeviction`; `null` when unreadable. */
  readonly maxmemoryPolicy: string | null;
  /** Set when Redis may evict keys, or when the policy could not be read. */
  readonly warning: string | null;
}

/** Bounds each CONFIG GET so a hung Redis cannot hang readiness. */
const TIMEOUT_MS = 1000;

async function policyOf(server: Redis): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const reply = await Promise.race([
    server.config('GET', 'maxmemory-policy') as Promise<string[]>,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('CONFIG GET timed out')), TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  return reply[1] ?? 'unknown';
}

/**
 * Checks Redis's `maxmemory-policy` (every master of a Cluster): any policy but `noeviction`
 * lets Redis delete keys under memory pressure — group state, fences, catalog, unread messages —
 * which breaks every guarantee. Warned about at start and shown in `/health/ready`'s details; it
 * does not fail readiness (the operator decides).
 */
@Injectable()
export class EvictionPolicyCheck implements OnApplicationBootstrap {
  private readonly logger = new Logger('Redis');

  constructor(@Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection) {}

  async onApplicationBootstrap(): Promise<void> {
    const status = await this.check();
    if (status.warning) this.logger.warn(status.warning);
  }

  /** Reads the policy now; never throws. */
  async check(): Promise<EvictionPolicyStatus> {
    try {
      const servers = this.redis instanceof Cluster ? this.redis.nodes('master') : [this.redis];
      for (const server of servers) {
        const policy = await policyOf(server);
        if (policy !== 'noeviction') {
          return {
            maxmemoryPolicy: policy,
            warning:
              `Redis maxmemory-policy is ${policy}: under memory pressure Redis may evict the ` +
              'coordinator state, fences and unread messages. Set maxmemory-policy noeviction.',
          };
        }
      }
      return { maxmemoryPolicy: 'noeviction', warning: null };
    } catch (error) {
      return {
        maxmemoryPolicy: null,
        warning:
          `could not read Redis maxmemory-policy (${error instanceof Error ? error.message : String(error)}); ` +
          'make sure it is noeviction.',
      };
    }
  }
}
