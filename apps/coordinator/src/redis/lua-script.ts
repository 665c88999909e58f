import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';

/**
 * A Lua script run with EVALSHA, falling back to EVAL when the server does not have it cached
 * (after a restart or on a new cluster node). Works on a standalone client and on a Cluster.
 */
export class LuaScript {
  readonly sha: string;

  constructor(
    readonly source: string,
    readonly numberOfKeys: number,
  ) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** Runs the script with `keys` (exactly `numberOfKeys`) and `args`. */
  async run(
    redis: Redis | Cluster,
    keys: readonly string[],
    args: ReadonlyArray<string | number>,
  ): Promise<unknown> {
    if (keys.length !== this.numberOfKeys) {
      throw new RangeError(`script expects ${this.numberOfKeys} keys, got ${keys.length}`);
    }
    try {
      return await redis.evalsha(this.sha, this.numberOfKeys, ...keys, ...args);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) {
        return redis.eval(this.source, this.numberOfKeys, ...keys, ...args);
      }
      throw error;
    }
  }
}
