import type { LuaScript } from '../../redis/lua-script.js';
import { ACK_FROM_LUA, FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `ackAndRead` — fence check; XACK the given ids; then read new entries with
 * `XREADGROUP GROUP <group> <memberId> COUNT <n> STREAMS <key> >` (non-blocking inside Lua).
 * One round trip per batch while data flows.
 *
 * Before reading, it checks that this member holds no other pending entry on the shard (a
 * reader acks everything it handled before it reads again, so anything left is an orphan: a
 * read whose reply was lost on a broken connection). If there is one it reads nothing and
 * asks the caller to run the claim phase, so such entries are never stuck.
 *
 * Reply modes (ARGV[4]): `entries` returns the entries read. `ids` returns only how many were
 * read and the first and last id: the caller fetches their fields with a plain `XRANGE` sent
 * right behind the script (a pure read, harmless without the fence) and checks that it got
 * exactly those entries. Turning a large reply into Lua values and back costs Redis more than
 * the XREADGROUP itself, so `ids` saves server time on every batch.
 *
 * KEYS: shard stream, meta hash. ARGV: group, memberId, count, mode, ackId….
 * Reply: `[1, [[id, fields], …]]` new entries (mode `entries`); `[3, n, firstId, lastId]`
 * new entries (mode `ids`); `[0, lastId]` nothing new (`lastId` is the stream's last entry id
 * or `0-0`, for `XREAD BLOCK … <lastId>`); `[2]` orphans pending.
 */
export const ACK_AND_READ_SCRIPT: LuaScript = {
  name: 'rscAckAndRead',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}${ACK_FROM_LUA}
ack_from(5)
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then
  return { 2 }
end
local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
if read then
  local entries = read[1][2]
  if ARGV[4] == 'ids' then return { 3, #entries, entries[1][1], entries[#entries][1] } end
  return { 1, entries }
end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then return { 0, last[1][1] } end
return { 0, '0-0' }
`,
};
