import type { LuaScript } from '../../redis/lua-script.js';
import { ACK_LIST_LUA } from './entry-id-list.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `ackBeforeRead` — fence check; XACK the given ids (the batch handled last); then check that
 * this member holds no other pending entry on the shard. The reader sends it right in front of
 * its gated `XREADGROUP` on the same connection (one round trip per batch) and reads the reply
 * before handling what the read returned.
 *
 * Why the pending check: a reader acks everything it handled before it reads again, so an entry
 * still pending on it here is an orphan — a read whose reply never arrived. By default ioredis
 * re-sends the commands left unanswered when a connection dropped, so a read could run twice and
 * its first reply be lost; reader connections turn that off (`autoResendUnfulfilledCommands:
 * false`, see `create-redis-connection.ts`), and this check is the guard in Redis behind it: if
 * an orphan is pending anyway, the reader ignores the read's reply and runs the claim phase, which
 * takes every pending entry over in id order. It also holds if the two commands were ever
 * reordered (the read's entries are then the orphans).
 *
 * With `ordering: 'key'` entries read earlier are still being handled (legitimately pending) when
 * the reader reads again, so the reader passes the highest id it has taken in (read or claimed)
 * as `seenUpTo`, and only an entry pending above it counts as an orphan.
 *
 * KEYS: shard stream (its meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId, the ack ids as one argument (see `encodeEntryIds`),
 * seenUpTo (optional; `''` or absent: any pending entry is an orphan).
 * Reply: how many entries were acknowledged, or -1 when orphans are pending (after acking).
 */
export const ACK_BEFORE_READ_SCRIPT: LuaScript = {
  name: 'rscAckBeforeRead',
  numberOfKeys: 1,
  lua: `${FENCE_CHECK_LUA}${ACK_LIST_LUA}
local acked = ack_list(3)
local from = '-'
if ARGV[4] and ARGV[4] ~= '' then from = '(' .. ARGV[4] end
if #redis.call('XPENDING', KEYS[1], ARGV[1], from, '+', 1, ARGV[2]) > 0 then return -1 end
return acked
`,
};
