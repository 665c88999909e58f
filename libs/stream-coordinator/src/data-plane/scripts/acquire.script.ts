import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `acquire` — fence check; then check that this member's read gate is open (the gate stream
 * carries the consumer group: `XGROUP CREATECONSUMER <gate> <group> <memberId>`, which also
 * registers the consumer the gated read uses); then create the group's consumer group on the
 * shard if it is missing (`XGROUP CREATE <key> <group> 0 MKSTREAM`; BUSYGROUP is ignored).
 *
 * KEYS: shard stream, this member's gate (the meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId.
 * Reply: `OK`, or `NOGATE` when the fence names this member but its gate does not exist (yet):
 * the coordinator creates both in one script, so the reader waits and tries again.
 */
export const ACQUIRE_SCRIPT: LuaScript = {
  name: 'rscAcquire',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}
local gate = redis.pcall('XGROUP', 'CREATECONSUMER', KEYS[2], ARGV[1], ARGV[2])
if type(gate) == 'table' and gate.err then return 'NOGATE' end
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP', 1, true) then
  return created
end
return 'OK'
`,
};
