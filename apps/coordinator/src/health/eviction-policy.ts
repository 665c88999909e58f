import { Inject, Injectable, Logger } from '@nestjs/common';
import { type RedisConnection, withTimeout } from '@redis-stream-coordinator/nestjs/internal';
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

/** How each server answered `CONFIG GET maxmemory-policy`: its reply, or why there is none. */
export type PolicyReply = { readonly reply: readonly string[] } | { readonly error: string };

/**
 * The verdict on every server's answer: a warning when one evicts, or when the policy of any could
 * not be read (no server to ask, a refused or timed-out `CONFIG GET`, or an empty reply, as some
 * proxies and managed services give) — never "noeviction" without having seen it everywhere.
 */
export function evictionVerdict(replies: readonly PolicyReply[]): EvictionPolicyStatus {
  const unreadable = (why: string): EvictionPolicyStatus => ({
    maxmemoryPolicy: null,
    warning: `could not read Redis maxmemory-policy (${why}); make sure it is noeviction.`,
  });
  if (replies.length === 0) return unreadable('no Redis server to ask');
  let problem: string | null = null;
  for (const answer of replies) {
    if ('error' in answer) {
      problem ??= answer.error;
      continue;
    }
    const policy = answer.reply[1];
    if (policy === undefined || policy === '') {
      problem ??= 'CONFIG GET answered no value';
      continue;
    }
    if (policy !== 'noeviction') {
      return {
        maxmemoryPolicy: policy,
        warning:
          `Redis maxmemory-policy is ${policy}: under memory pressure Redis may evict the ` +
          'coordinator state, fences and unread messages. Set maxmemory-policy noeviction.',
      };
    }
  }
  return problem === null ? { maxmemoryPolicy: 'noeviction', warning: null } : unreadable(problem);
}

async function askPolicy(server: Redis): Promise<PolicyReply> {
  try {
    const reply = await withTimeout(
      server.config('GET', 'maxmemory-policy') as Promise<string[]>,
      TIMEOUT_MS,
      'CONFIG GET',
    );
    return { reply };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** Resolves when a Cluster client knows its masters (bounded), so none is skipped at start. */
async function clusterReady(cluster: Cluster): Promise<void> {
  if (cluster.status === 'ready') return;
  let timer: NodeJS.Timeout | undefined;
  let onReady: (() => void) | undefined;
  await new Promise<void>((resolve) => {
    onReady = resolve;
    cluster.once('ready', onReady);
    timer = setTimeout(resolve, TIMEOUT_MS);
  });
  clearTimeout(timer);
  if (onReady) cluster.off('ready', onReady);
}

/**
 * Checks Redis's `maxmemory-policy` (every master of a Cluster): any policy but `noeviction`
 * lets Redis delete keys under memory pressure — group state, fences, catalog, unread messages —
 * which breaks every guarantee. Warned about at start and shown in `/health/ready`'s details; it
 * does not fail readiness or startup (the operator decides; `CONFIG` may be refused by ACLs or a
 * managed service, which is warned about as unreadable).
 */
@Injectable()
export class EvictionPolicyCheck {
  private readonly logger = new Logger('Redis');

  constructor(@Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection) {}

  /** Warns once Redis answered at start (a step of the coordinator's start-up). */
  async warnAtStart(): Promise<void> {
    const status = await this.check();
    if (status.warning) this.logger.warn(status.warning);
  }

  /** Reads the policy now (every master at once); never throws. */
  async check(): Promise<EvictionPolicyStatus> {
    try {
      let servers: Redis[] = [this.redis as Redis];
      if (this.redis instanceof Cluster) {
        await clusterReady(this.redis);
        servers = this.redis.nodes('master');
      }
      return evictionVerdict(await Promise.all(servers.map(askPolicy)));
    } catch (error) {
      return evictionVerdict([{ error: error instanceof Error ? error.message : String(error) }]);
    }
  }
}
