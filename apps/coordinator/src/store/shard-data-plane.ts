import type { Cluster, Redis } from 'ioredis';
import { type KeySpace, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import { runScript, parseXinfoGroups } from '@redis-stream-coordinator/nestjs/internal';
import type { ConsumerGroupInfo, ShardInspection } from '../core/streams/drain-rule.js';
import { deleteShardKeys } from './fence-writer.js';
import { CLEAR_RESHARD_ORIGIN_SCRIPT, OPEN_SHARD_SCRIPT } from './stream-store.scripts.js';

/**
 * Sets a new shard's meta hash `state=open` unless a step already closed it (a shard id is opened
 * once, by the step that created it; see {@link OPEN_SHARD_SCRIPT}). Resolves `false` when the
 * shard is closed.
 */
export async function openShardMeta(redis: Redis | Cluster, metaKey: string): Promise<boolean> {
  return (await runScript(redis, OPEN_SHARD_SCRIPT, [metaKey])) === 1;
}

/**
 * What the reshard driver does to shards in Redis: open and close them for producers (the meta
 * hash's `state`), create consumer groups, inspect a closed shard's consumer groups, delete a
 * removed shard. Every call is idempotent, so a step can be repeated after a crash.
 */
export class ShardDataPlane {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
  ) {}

  /**
   * Marks new shards writable (`state=open`) — only a shard that was never opened or is open
   * already: a shard a later step closed stays closed (a replica resuming a stale `preparing`
   * must not reopen it). Resolves with the shards refused because they are closed. Each opened
   * shard's meta hash also records `origin=reshard` (before the layout naming it is published):
   * a member creating a group's consumer group on it starts at its first entry even with
   * `startFrom: 'latest'`, as the messages moved into it are not new, until {@link clearOrigin}
   * removes the marker when the reshard completes.
   */
  async open(stream: string, shards: readonly number[]): Promise<number[]> {
    const refused = await Promise.all(
      shards.map(async (id) => {
        const meta = this.metaKey(stream, id);
        if (!(await openShardMeta(this.redis, meta))) return [id];
        await this.redis.hset(meta, 'origin', 'reshard');
        return [];
      }),
    );
    return refused.flat();
  }

  /**
   * Removes `origin=reshard` from the shards' meta hashes, as the reshard completes (before the
   * record saying so is written, so a completed reshard never leaves it behind): the groups the
   * reshard knew have their consumer groups at `0` already, and a group created afterwards starts
   * where its `startFrom` says, on these shards as on any other. Idempotent.
   */
  async clearOrigin(stream: string, shards: readonly number[]): Promise<void> {
    await Promise.all(
      shards.map((id) =>
        runScript(this.redis, CLEAR_RESHARD_ORIGIN_SCRIPT, [this.metaKey(stream, id)]),
      ),
    );
  }

  /** Refuses further writes to shards (`state=closed`): producers get STALE_ROUTING and refresh. */
  async close(stream: string, shards: readonly number[]): Promise<void> {
    await Promise.all(
      shards.map((id) => this.redis.hset(this.metaKey(stream, id), 'state', 'closed')),
    );
  }

  /** `XGROUP CREATE <shard> <group> 0 MKSTREAM` for every pair (an existing group is kept). */
  async createGroups(
    stream: string,
    shards: readonly number[],
    groups: readonly string[],
  ): Promise<void> {
    const writes: Array<Promise<unknown>> = [];
    for (const id of shards) {
      for (const group of groups) {
        writes.push(
          this.redis
            .xgroup('CREATE', this.keys.shardKey(stream, id), group, '0', 'MKSTREAM')
            .catch((error: unknown) => {
              if (!(error instanceof Error && error.message.includes('BUSYGROUP'))) throw error;
            }),
        );
      }
    }
    await Promise.all(writes);
  }

  /** Names of the consumer groups on a shard (none when the key does not exist). */
  async groupNames(stream: string, shard: number): Promise<string[]> {
    return [...(await this.groupInfo(this.keys.shardKey(stream, shard))).keys()];
  }

  /** Length, last entry id and consumer groups of a shard (an absent key is an empty stream). */
  async inspect(stream: string, shard: number): Promise<ShardInspection> {
    const key = this.keys.shardKey(stream, shard);
    const [groups, length, last] = await Promise.all([
      this.groupInfo(key),
      this.redis.xlen(key),
      this.redis.xrevrange(key, '+', '-', 'COUNT', 1),
    ]);
    return { length, lastEntryId: last[0]?.[0] ?? null, groups };
  }

  /**
   * Deletes a removed shard's stream, meta hash and any read gate left on it (the dead-letter
   * stream is the stream's, and stays).
   */
  async remove(stream: string, shard: number): Promise<void> {
    await deleteShardKeys(this.redis, this.keys.shardKey(stream, shard));
  }

  private metaKey(stream: string, shard: number): string {
    return shardMetaKey(this.keys.shardKey(stream, shard));
  }

  private async groupInfo(key: string): Promise<Map<string, ConsumerGroupInfo>> {
    let reply: unknown;
    try {
      reply = await this.redis.xinfo('GROUPS', key);
    } catch (error) {
      if (error instanceof Error && /no such key/i.test(error.message)) return new Map();
      throw error;
    }
    return parseXinfoGroups(reply);
  }
}
