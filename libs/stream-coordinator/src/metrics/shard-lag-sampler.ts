import type { DataPlaneLogger } from '../interfaces/data-plane-logger.interface.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import { parseXinfoGroups } from '../redis/xinfo-groups.js';
import type { GrantedShard } from '../runtime/membership.js';
import { shardId } from '../runtime/membership.js';

/**
 * One shard's consumer-group figures as last sampled.
 *
 * @publicApi
 */
export interface ShardLagSample {
  readonly stream: string;
  readonly shard: number;
  /** Entries not yet delivered to the group; `null` when Redis cannot tell (or is older than 7). */
  readonly lag: number | null;
  /** Entries delivered and not acknowledged. */
  readonly pending: number;
  /** `performance.now()` of the sample. */
  readonly sampledAt: number;
}

/** What {@link ShardLagSampler} needs. */
export interface ShardLagSamplerOptions {
  readonly group: string;
  /** The shards to sample (the member's held shards, read at every round). */
  readonly shards: () => readonly GrantedShard[];
  /** The connection to send `XINFO GROUPS` on (the shared command connection). */
  readonly connection: () => RedisConnection;
  readonly intervalMs: number;
  readonly logger: DataPlaneLogger;
}

/**
 * Samples `XINFO GROUPS <shard key>` for every held shard every `intervalMs` (off the read
 * path), keeping the group's `lag` and `pending`. A shard that is no longer held is forgotten
 * at the next round; a failed round keeps the previous figures.
 *
 * @internal
 */
export class ShardLagSampler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private samples = new Map<string, ShardLagSample>();
  private failures = 0;

  constructor(private readonly options: ShardLagSamplerOptions) {}

  /** The latest figures of the held shards. */
  values(): ReadonlyMap<string, ShardLagSample> {
    return this.samples;
  }

  /** Starts sampling (first round at once). */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => void this.sample(), this.options.intervalMs);
    this.timer.unref();
    void this.sample();
  }

  /** Stops sampling and waits for a round in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One round (rounds never overlap). */
  sample(): Promise<void> {
    this.running ??= this.round().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async round(): Promise<void> {
    const shards = this.options.shards();
    if (shards.length === 0) {
      this.samples = new Map();
      return;
    }
    let connection: RedisConnection;
    try {
      connection = this.options.connection();
    } catch {
      return;
    }
    const next = new Map<string, ShardLagSample>();
    let failed = 0;
    await Promise.all(
      shards.map(async (s) => {
        const id = shardId(s.stream, s.shard);
        try {
          const reply = (await connection.xinfo('GROUPS', s.key)) as unknown[];
          const figures = groupFigures(reply, this.options.group);
          if (figures)
            next.set(id, {
              stream: s.stream,
              shard: s.shard,
              ...figures,
              sampledAt: performance.now(),
            });
        } catch (error) {
          failed++;
          const previous = this.samples.get(id);
          if (previous) next.set(id, previous);
          if (this.failures === 0 && failed === 1) {
            this.options.logger.debug?.(`lag sampling of ${s.key} failed: ${String(error)}`);
          }
        }
      }),
    );
    this.failures = failed > 0 ? this.failures + 1 : 0;
    this.samples = next;
  }
}

/**
 * `lag` and `pending` of `group` in an `XINFO GROUPS` reply, or `null` when it is not there.
 *
 * @publicApi
 */
export function groupFigures(
  reply: unknown,
  group: string,
): { lag: number | null; pending: number } | null {
  const found = parseXinfoGroups(reply).get(group);
  return found ? { lag: found.lag, pending: found.pending } : null;
}
