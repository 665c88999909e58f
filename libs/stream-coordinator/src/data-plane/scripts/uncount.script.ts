import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `uncount` — fence check, then takes one delivery off each given entry still pending on this
 * member (`XCLAIM … RETRYCOUNT <count - 1>`, never below 0). With `ordering: 'key'` a reader
 * that gives a shard up in order (revoke, shutdown, self-fence) sends the entries it leaves
 * pending that no handler call counted for — never handed, or handed and stopped because the
 * shard was being given up — since the next owner's claim counts a delivery for every entry it
 * takes over (see the `claim` script).
 *
 * An entry deleted or trimmed while pending is dropped from the pending list by that XCLAIM
 * (Redis ≥ 7.0) and reported, as the `claim` script does (without `JUSTID`, so XCLAIM says
 * which entries it found; `XRANGE` is not in the member's ACL, docs/protocol.md §13.5).
 *
 * KEYS: shard stream (its meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId, ids.
 * Reply: `[changed, [deletedId, …]]`.
 */
export const UNCOUNT_SCRIPT: LuaScript = {
  name: 'rscUncount',
  numberOfKeys: 1,
  lua: `${FENCE_CHECK_LUA}
local changed, deleted = 0, {}
for i = 3, #ARGV do
  local entry = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  if entry and entry[2] == ARGV[2] and entry[4] > 0 then
    local claimed = redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'RETRYCOUNT', entry[4] - 1)[1]
    if claimed and claimed[2] then
      changed = changed + 1
    else
      redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
      deleted[#deleted + 1] = ARGV[i]
    end
  end
end
return { changed, deleted }
`,
};
