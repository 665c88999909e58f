import type { Cluster, Redis } from 'ioredis';
import { ownerField, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import type { OwnershipChange } from '../core/group-transaction.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import { LuaScript } from '../redis/lua-script.js';
import { FENCE_GRANT_SCRIPT, FENCE_RELEASE_SCRIPT } from './fence.scripts.js';

const grantScript = new LuaScript(FENCE_GRANT_SCRIPT, 1);
const releaseScript = new LuaScript(FENCE_RELEASE_SCRIPT, 1);

/**
 * Mirrors shard ownership decisions into the data plane: each shard's meta hash names the one
 * member allowed to read and ack it for a group. Members read and ack through Lua scripts that
 * check this field, so a member the coordinator no longer considers the owner is refused by Redis
 * itself (beyond Kafka: a zombie cut off from the coordinator can neither steal nor ack).
 */
export class FenceWriter {
  constructor(private readonly redis: Redis | Cluster) {}

  /** Applies ownership changes decided at group `version`. Each shard is written independently. */
  async apply(
    groupId: string,
    changes: readonly OwnershipChange[],
    version: number,
    catalog: StreamCatalog,
  ): Promise<void> {
    const field = ownerField(groupId);
    await Promise.all(
      changes.map((c) => {
        const meta = shardMetaKey(catalog.shardKey(c.stream, c.shard));
        if (c.to !== null) return grantScript.run(this.redis, [meta], [field, version, c.to]);
        if (c.from !== null) return releaseScript.run(this.redis, [meta], [field, version, c.from]);
        return Promise.resolve(0);
      }),
    );
  }

  /** (Re)writes the grant of every shard a member holds, e.g. after a full heartbeat. */
  async ensure(
    groupId: string,
    memberId: string,
    shards: Iterable<readonly [string, number]>,
    version: number,
    catalog: StreamCatalog,
  ): Promise<void> {
    const field = ownerField(groupId);
    const writes: Array<Promise<unknown>> = [];
    for (const [stream, shard] of shards) {
      const meta = shardMetaKey(catalog.shardKey(stream, shard));
      writes.push(grantScript.run(this.redis, [meta], [field, version, memberId]));
    }
    await Promise.all(writes);
  }
}
