import type { Cluster, Redis } from 'ioredis';
import { type KeySpace, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import { runScript, parseXinfoGroups } from '@redis-stream-coordinator/nestjs/internal';
import type { ConsumerGroupInfo, ShardInspection } from '../core/streams/drain-rule.js';
import { deleteShardKeys } from './fence-writer.js';
import {
  CLEAR_RESHARD_ORIGIN_SCRIPT,
  OPEN_SHARD_SCRIPT,
  WITHDRAW_SHARD_SCRIPT,
} from './stream-store.scripts.js';

/** Who opens a shard, and what it records ({@link OPEN_SHARD_SCRIPT}). */
export interface ShardOpener {
  /** Recorded as the meta hash's `opener`. */
  readonly id: string;
  /** Recorded as `origin` with the open (docs/protocol.md §12.3). */
  readonly origin?: 'reshard' | 'restored';
  /** Take over a shard that is open already (the reshard step that owns it). */
  readonly takeOver: boolean;
}

/** What {@link openShardMeta} did: `opened` recorded the opener, `open` found it open. */
export type OpenOutcome = 'opened' | 'open' | 'closed';

/**
 * Sets a new shard's meta hash `state=open` unless a step already closed it (a shard id is opened
 * once, by the step that created it; see {@link OPEN_SHARD_SCRIPT}), with `opener` and `origin`.
 */
export async function openShardMeta(
  redis: Redis | Cluster,
  shardKey: string,
  opener: ShardOpener,
): Promise<OpenOutcome> {
  const args = [opener.id, opener.origin ?? '', opener.takeOver ? '1' : '0'];
  const result = await runScript(redis, OPEN_SHARD_SCRIPT, [
    shardMetaKey(shardKey),
    shardKey,
    ...args,
  ]);
  return result === 2 ? 'opened' : result === 1 ? 'open' : 'closed';
}

/** How a reshard step opens its new shards: it owns them, also when they are open already. */
const RESHARD_OPENER: ShardOpener = { id: 'reshard', origin: 'reshard', takeOver: true };

/**
 * What {@link withdrawShard} did: `kept` (another opener holds it, or a step closed it),
 * `withdrawn`, `stream-moved` (withdrawn, its stream moved aside), `moved-before` (this opener
 * withdrew it and moved its stream earlier: a repeat, e.g. after a lost reply), `not-open` (nothing
 * is open there: not opened yet, or withdrawn earlier with nothing to move).
 */
export type WithdrawOutcome = 'kept' | 'withdrawn' | 'stream-moved' | 'moved-before' | 'not-open';

/**
 * Takes back `state=open` from a shard `opener` opened, unless another step took it over since,
 * and moves its stream to {@link withdrawnEntriesKey} when it holds entries or consumer groups
 * ({@link WITHDRAW_SHARD_SCRIPT}).
 */
export async function withdrawShard(
  redis: Redis | Cluster,
  shardKey: string,
  opener: string,
): Promise<WithdrawOutcome> {
  const keys = [shardMetaKey(shardKey), shardKey, withdrawnEntriesKey(shardKey, opener)];
  const result = await runScript(redis, WITHDRAW_SHARD_SCRIPT, [...keys, opener]);
  const outcomes: readonly WithdrawOutcome[] = [
    'kept',
    'withdrawn',
    'stream-moved',
    'moved-before',
    'not-open',
  ];
  return outcomes[Number(result)] ?? 'kept';
}

/**
 * Where a withdrawn shard's entries go (docs/protocol.md §13.6): same hash tag as the shard, named
 * for the opener that withdrew it; no member reads it.
 */
export function withdrawnEntriesKey(shardKey: string, opener: string): string {
  return `${shardKey}:withdrawn:${opener}`;
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
        const opened = await openShardMeta(
          this.redis,
          this.keys.shardKey(stream, id),
          RESHARD_OPENER,
        );
        return opened === 'closed' ? [id] : [];
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
