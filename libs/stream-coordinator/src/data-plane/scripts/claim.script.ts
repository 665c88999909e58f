import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `claim` — fence check, then `XAUTOCLAIM <key> <group> <memberId> 0 <cursor> COUNT <n>`: takes
 * over pending entries of earlier owners (and our own). A min-idle of 0 is safe because the
 * shard's ownership moved to this member through the fence. XAUTOCLAIM bumps each entry's
 * delivery count; the script reads the new counts with XPENDING.
 *
 * KEYS: shard stream, meta hash. ARGV: group, memberId, cursor, count.
 * Reply: `[nextCursor, [[id, fields, deliveryCount], …], [deletedId, …]]` (deleted ids: entries
 * that were trimmed or deleted while pending; Redis ≥ 7.0 removes them from the PEL).
 */
export const CLAIM_SCRIPT: LuaScript = {
  name: 'rscClaim',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}
local reply = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'COUNT', ARGV[4])
local entries = {}
for _, entry in ipairs(reply[2]) do
  if entry and entry[2] then entries[#entries + 1] = entry end
end
local out = {}
if #entries > 0 then
  local counts = {}
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], entries[1][1], entries[#entries][1],
    #entries, ARGV[2])
  for _, p in ipairs(pending) do counts[p[1]] = p[4] end
  for i, entry in ipairs(entries) do out[i] = { entry[1], entry[2], counts[entry[1]] or 1 } end
end
return { reply[1], out, reply[3] or {} }
`,
};
