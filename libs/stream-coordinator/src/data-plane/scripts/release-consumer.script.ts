import type { LuaScript } from '../../redis/lua-script.js';

/**
 * `releaseConsumer` — removes this member's consumer from the shard's consumer group
 * (`XGROUP DELCONSUMER`) when nothing is pending on it, so members that come and go (every
 * restart is a new member id) do not leave one consumer per shard behind for ever. A consumer
 * with pending entries is never deleted: that would drop the entries from the pending list,
 * and nobody could claim them any more. The check and the delete are one script (atomic).
 *
 * Not fenced: deleting an empty consumer of one's own changes no data, and a member whose shard
 * moved on should clean up too.
 *
 * KEYS: shard stream. ARGV: group, memberId.
 * Reply: 1 deleted; 0 kept (entries pending on it); -1 no such group (nothing to do).
 */
export const RELEASE_CONSUMER_SCRIPT: LuaScript = {
  name: 'rscReleaseConsumer',
  numberOfKeys: 1,
  lua: `
local pending = redis.pcall('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if type(pending) == 'table' and pending.err then return -1 end
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
};
