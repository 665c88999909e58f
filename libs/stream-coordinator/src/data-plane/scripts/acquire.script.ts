import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `acquire` — fence check, then create the group's consumer group on the shard if it is missing
 * (`XGROUP CREATE <key> <group> 0 MKSTREAM`; BUSYGROUP is ignored). Returns `OK`.
 *
 * KEYS: shard stream, meta hash. ARGV: group, memberId.
 */
export const ACQUIRE_SCRIPT: LuaScript = {
  name: 'rscAcquire',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP', 1, true) then
  return created
end
return 'OK'
`,
};
