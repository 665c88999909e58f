import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `claim` — fence check, then take over up to `count` pending entries from `cursor`, in id
 * order: earlier owners' entries and this member's own. A min-idle of 0 is safe because the
 * shard's ownership moved to this member through the fence.
 *
 * Delivery counts: an entry pending on another consumer is a new delivery (its count goes up by
 * one, as XAUTOCLAIM would). An entry pending on this member keeps its count — the reader comes
 * back here after every connection reset, and its unhandled tail must not be counted again each
 * time (a few resets in one batch dead-lettered entries the handler never saw) — except the one
 * the handler was last given, at the count it was given (`handedId`, `handedCount`): that try
 * happened, so re-reading it is a new delivery. Each entry is taken with `XCLAIM … RETRYCOUNT
 * <count>` (it sets the count instead of raising it; XAUTOCLAIM, and XREADGROUP reading its own
 * history, always raise it). An entry deleted or trimmed while pending is reported and acked
 * away (Redis ≥ 7.0 drops it from the PEL when XCLAIM finds it gone).
 *
 * KEYS: shard stream, meta hash. ARGV: group, memberId, cursor (inclusive; `0-0` to start),
 * count, handedId (`''`: none), handedCount.
 * Reply: `[nextCursor, [[id, fields, deliveryCount], …], [deletedId, …]]`, `nextCursor` `0-0`
 * when the pending list has been gone through.
 */
export const CLAIM_SCRIPT: LuaScript = {
  name: 'rscClaim',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}
local count = tonumber(ARGV[4])
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], '+', count + 1)
local n = math.min(#pending, count)
local cursor = '0-0'
if #pending > n then cursor = pending[n + 1][1] end
local out, deleted = {}, {}
for i = 1, n do
  local id, deliveries = pending[i][1], pending[i][4]
  if pending[i][2] ~= ARGV[2] or (id == ARGV[5] and deliveries == tonumber(ARGV[6])) then
    deliveries = deliveries + 1
  end
  local entry = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'RETRYCOUNT', deliveries)[1]
  if entry and entry[2] then
    out[#out + 1] = { entry[1], entry[2], deliveries }
  else
    redis.call('XACK', KEYS[1], ARGV[1], id)
    deleted[#deleted + 1] = id
  end
end
return { cursor, out, deleted }
`,
};
