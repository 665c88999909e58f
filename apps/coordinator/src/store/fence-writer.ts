import type { Cluster, Redis } from 'ioredis';
import {
  gateField,
  ownerField,
  shardGateKey,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import { runScript, type LuaScript } from '@redis-stream-coordinator/nestjs/internal';
import type { OwnershipChange } from '../core/group-transaction.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import type { FenceStamp } from './fence-stamp.js';
import { FENCE_GRANT_SCRIPT, FENCE_RELEASE_SCRIPT, SHARD_DELETE_SCRIPT } from './fence.scripts.js';
import { FenceWriteRefusedError } from './fence-write-refused.error.js';

/** Field of a shard's meta hash recording which decision the group's fence token reflects. */
export function fenceOrderField(group: string): string {
  return `fence-order:${group}`;
}

/** Field of a shard's meta hash recording the identity of the commit that decision came from. */
export function fenceCommitField(group: string): string {
  return `fence-commit:${group}`;
}

/**
 * Deletes a removed shard's data-plane keys in one same-slot script: the stream, its meta hash and
 * every read gate left on it (see `SHARD_DELETE_SCRIPT`). Resolves to the number of keys deleted.
 */
export async function deleteShardKeys(redis: Redis | Cluster, shardKey: string): Promise<number> {
  return (await runScript(redis, SHARD_DELETE_SCRIPT, [
    shardKey,
    shardMetaKey(shardKey),
  ])) as number;
}

/**
 * Mirrors shard ownership decisions into the data plane: each shard's meta hash names the one
 * member allowed to read and ack it for a group, and that member alone has a read gate (see
 * `fence.scripts.ts`). Members ack through Lua scripts that check the token and read through
 * their gate, so a member the coordinator no longer considers the owner is refused by Redis
 * itself (beyond Kafka: a zombie cut off from the coordinator can neither read nor ack). Every
 * write is ordered by its {@link FenceStamp}, so writes may be delayed, repeated or re-applied
 * after a crash without ever undoing a newer decision. `ensure` re-creates a missing gate too.
 * A refused write is never ignored: once every write of a call ran, the call rejects with a
 * {@link FenceWriteRefusedError} naming the refused shards.
 */
export class FenceWriter {
  constructor(private readonly redis: Redis | Cluster) {}

  /** Applies ownership changes decided at `stamp`: grants name the new owner, releases clear it. */
  async apply(
    groupId: string,
    changes: readonly OwnershipChange[],
    stamp: FenceStamp,
    catalog: StreamCatalog,
  ): Promise<void> {
    const written = await Promise.all(
      changes.map((c) =>
        c.to !== null
          ? this.write(
              FENCE_GRANT_SCRIPT,
              groupId,
              catalog.shardKey(c.stream, c.shard),
              stamp,
              c.to,
            )
          : this.write(FENCE_RELEASE_SCRIPT, groupId, catalog.shardKey(c.stream, c.shard), stamp),
      ),
    );
    refuseUnwritten(
      groupId,
      stamp,
      changes.map((c) => [c.stream, c.shard] as const),
      written,
    );
  }

  /** (Re)writes the grant of every shard a member holds, e.g. after a full heartbeat. */
  async ensure(
    groupId: string,
    memberId: string,
    shards: Iterable<readonly [string, number]>,
    stamp: FenceStamp,
    catalog: StreamCatalog,
  ): Promise<void> {
    const refs: Array<readonly [string, number]> = [];
    const writes: Array<Promise<unknown>> = [];
    for (const [stream, shard] of shards) {
      refs.push([stream, shard]);
      writes.push(
        this.write(FENCE_GRANT_SCRIPT, groupId, catalog.shardKey(stream, shard), stamp, memberId),
      );
    }
    refuseUnwritten(groupId, stamp, refs, await Promise.all(writes));
  }

  private write(
    script: LuaScript,
    groupId: string,
    shardKey: string,
    stamp: FenceStamp,
    memberId?: string,
  ): Promise<unknown> {
    const args: Array<string | number> = [
      ownerField(groupId),
      fenceOrderField(groupId),
      stamp.incarnation,
      stamp.version,
      gateField(groupId),
      groupId,
      shardGateKey(shardKey, groupId, ''),
      stamp.commitId,
      fenceCommitField(groupId),
    ];
    const keys = [shardMetaKey(shardKey)];
    if (memberId !== undefined) {
      args.push(memberId);
      keys.push(shardGateKey(shardKey, groupId, memberId));
    }
    return runScript(this.redis, script, [...keys, ...args]);
  }
}

/** Throws a {@link FenceWriteRefusedError} naming every shard whose write was refused (0). */
function refuseUnwritten(
  groupId: string,
  stamp: FenceStamp,
  shards: ReadonlyArray<readonly [string, number]>,
  results: readonly unknown[],
): void {
  const refused = shards.filter((_, i) => results[i] === 0);
  if (refused.length > 0) throw new FenceWriteRefusedError(groupId, stamp, refused);
}
