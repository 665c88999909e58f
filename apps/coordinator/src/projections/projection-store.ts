import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { runScript, type LuaScript } from '@redis-stream-coordinator/nestjs/internal';
import type { ProjectedGroup } from './group-projection.js';

/**
 * Writes a projection only if the stored one is still at the position it was computed from
 * (ARGV[1]: expected `lastEventId`, `''` = none stored, `*` = any), so two replicas catching up
 * at once never move it backwards. ARGV[2]: new `lastEventId`, ARGV[3]: body. Returns 1 or 0.
 */
const PUT_SCRIPT: LuaScript = {
  name: 'rscCoordProjectionPut',
  numberOfKeys: 1,
  lua: `
local cur = redis.call('HGET', KEYS[1], 'lastEventId')
if ARGV[1] ~= '*' then
  if ARGV[1] == '' then
    if cur then return 0 end
  elseif cur ~= ARGV[1] then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'lastEventId', ARGV[2], 'body', ARGV[3])
return 1
`,
};

/**
 * The `<prefix>:{@g:<group>}:projection` hash (`KeySpace.groupProjectionKey`) of each group: the last {@link ProjectedGroup}
 * folded from its event log (`lastEventId`, `body` JSON). Same hash tag as the group's other
 * keys. It is a cache of the log: dropping it loses nothing.
 */
export class ProjectionStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
  ) {}

  /** The projection key of a group. */
  key(groupId: string): string {
    return this.keys.groupProjectionKey(groupId);
  }

  /** The stored projection, or `null`. */
  async get(groupId: string): Promise<ProjectedGroup | null> {
    const body = await this.redis.hget(this.key(groupId), 'body');
    return body ? (JSON.parse(body) as ProjectedGroup) : null;
  }

  /**
   * Stores `projection` if the stored one is still at `expectedLastEventId` (`''`: none; `*`:
   * unconditionally). Resolves whether it was written.
   */
  async put(
    groupId: string,
    projection: ProjectedGroup,
    expectedLastEventId: string,
  ): Promise<boolean> {
    const written = await runScript(this.redis, PUT_SCRIPT, [
      this.key(groupId),
      expectedLastEventId,
      projection.lastEventId,
      JSON.stringify(projection),
    ]);
    return written === 1;
  }

  /** Deletes a group's projection. */
  async drop(groupId: string): Promise<void> {
    await this.redis.del(this.key(groupId));
  }
}
