import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `claim` — fence check, then take over up to `count` pending entries from `cursor`, in id
 * order: earlier owners' entries and this member's own. A min-idle of 0 is safe because the
 * shard's ownership moved to this member through the fence.
 *
 * Delivery counts: taking an entry is a new delivery (its count goes up by one, as XAUTOCLAIM
 * would) unless it is this reader's own unhandled tail. The reader comes back here after every
 * connection reset, and the entries it took or read but never handed to the handler must not
 * be counted again each time (a few resets in one batch dead-lettered entries the handler never
 * saw). So an entry pending on this member keeps its count, except:
 * - the one the handler was last given, at the count it was given (`handedId`,
 *   `handedCount`): that try happened (a redelivery whose reply was lost, already counted,
 *   keeps its raised count), and any own entry below it (handed before it);
 * - one at or above `foreignFrom`: pending on this member before the current reader took it
 *   over — an earlier reader of the same member id (a member fenced and given the shard back,
 *   a restarted process with a fixed member id) may have handed it, maybe to a handler that
 *   crashed the process; not counting it would retry such an entry for ever. Except the first
 *   `maybeTaken` pending entries from `foreignFrom` on: a claim of the current reader whose reply
 *   was lost may have taken (and counted) them already.
 *
 * With `ordering: 'key'` (`keyOrder` `key`) entries are not handed in id order, so "below the
 * handed one" means nothing: an own entry is counted only when it is listed in the handed pairs
 * (`id count …`: handed and not acknowledged, at the count it was handed with), never for being
 * read or claimed and buffered behind its key. An earlier owner's (or earlier reader's) entry is
 * counted as above; a key-ordered reader that gave the shard up in order took that delivery back
 * first for the entries no handler call counted for (the `uncount` script).
 *
 * Each entry is taken with `XCLAIM … RETRYCOUNT <count>` (it sets the count instead of raising
 * it; XAUTOCLAIM, and XREADGROUP reading its own history, always raise it). An entry deleted or
 * trimmed while pending is reported and acked away (Redis ≥ 7.0 drops it from the PEL when
 * XCLAIM finds it gone).
 *
 * KEYS: shard stream (its meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId, cursor (inclusive; `0-0` to start),
 * count, handedId (`''`: none), handedCount, foreignFrom (`''`: none), maybeTaken, keyOrder
 * (`key`, else absent or `''`); with `key`: the number of handed pairs, then the pairs
 * (id, count).
 * Reply: `[nextCursor, [[id, fields, deliveryCount], …], [deletedId, …]]`, `nextCursor` `0-0`
 * when the pending list has been gone through.
 */
export const CLAIM_SCRIPT: LuaScript = {
  name: 'rscClaim',
  numberOfKeys: 1,
  lua: `${FENCE_CHECK_LUA}
local function part_less(a, b)
  if #a ~= #b then return #a < #b end
  return a < b
end
-- stream ids in canonical form (no leading zeros): exact, past 2^53 too
local function id_less(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  if am ~= bm then return part_less(am, bm) end
  return part_less(as, bs)
end
local count = tonumber(ARGV[4])
local handed, handedCount, foreignFrom = ARGV[5], tonumber(ARGV[6]), ARGV[7]
local maybeTakenTo = nil
if foreignFrom ~= '' and tonumber(ARGV[8]) > 0 then
  local lost = redis.call('XPENDING', KEYS[1], ARGV[1], foreignFrom, '+', tonumber(ARGV[8]))
  if #lost > 0 then maybeTakenTo = lost[#lost][1] end
end
local function foreign(id)
  if foreignFrom == '' or id_less(id, foreignFrom) then return false end
  return not maybeTakenTo or id_less(maybeTakenTo, id)
end
local keyOrder = ARGV[9] == 'key'
local handedAt = {}
if keyOrder then
  for j = 1, tonumber(ARGV[10]) do handedAt[ARGV[9 + 2 * j]] = tonumber(ARGV[10 + 2 * j]) end
end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], '+', count + 1)
local n = math.min(#pending, count)
local cursor = '0-0'
if #pending > n then cursor = pending[n + 1][1] end
local out, deleted = {}, {}
for i = 1, n do
  local id, deliveries = pending[i][1], pending[i][4]
  local earlier = pending[i][2] ~= ARGV[2] or foreign(id)
  if earlier
      or (keyOrder and handedAt[id] == deliveries)
      or (not keyOrder and handed ~= ''
        and (id_less(id, handed) or (id == handed and deliveries == handedCount))) then
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
