import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `redeliver` — fence check, then `XCLAIM <key> <group> <memberId> 0 <id>`, which counts as a
 * new delivery (Redis bumps the entry's delivery counter), and the new count from XPENDING.
 * An entry that was deleted or trimmed meanwhile is acked away (Redis ≥ 7.0 already drops it
 * from the PEL) and reported as missing.
 *
 * KEYS: shard stream (its meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId, id.
 * Reply: `[1, id, fields, deliveryCount]`, or `[0]` when the entry is gone.
 */
export const REDELIVER_SCRIPT: LuaScript = {
  name: 'rscRedeliver',
  numberOfKeys: 1,
  lua: `${FENCE_CHECK_LUA}
local claimed = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3])
local entry = claimed[1]
if not entry or not entry[2] then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
  return { 0 }
end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
return { 1, entry[1], entry[2], pending[1] and pending[1][4] or 1 }
`,
};
