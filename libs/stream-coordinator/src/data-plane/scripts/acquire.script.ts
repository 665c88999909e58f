import type { LuaScript } from '../../redis/lua-script.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `acquire` — fence check; then check that this member's read gate is open (the gate stream
 * carries the consumer group: `XGROUP CREATECONSUMER <gate> <group> <memberId>`, which also
 * registers the consumer the gated read uses); then create the group's consumer group on the
 * shard if it is missing (`XGROUP CREATE <key> <group> <start> MKSTREAM`; BUSYGROUP is ignored).
 * `<start>` is `0` (the shard's first entry) or `$` (its next entry: `startFrom: 'latest'`); a
 * shard whose meta hash has any `origin` (`reshard`: a running reshard created it; `restored`:
 * the coordinator created it again after Redis lost its data) always starts at `0`, since the
 * entries in it are not older than the group's members could see (docs/protocol.md §12.3).
 *
 * KEYS: shard stream, this member's gate (the meta hash is derived, see FENCE_CHECK_LUA). ARGV:
 * group, memberId, start (`0` or `$`; absent: `0`).
 * Reply: `OK`, or `NOGATE` when the fence names this member but its gate does not exist (yet):
 * the coordinator creates both in one script, so the reader waits and tries again.
 */
export const ACQUIRE_SCRIPT: LuaScript = {
  name: 'rscAcquire',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}
local gate = redis.pcall('XGROUP', 'CREATECONSUMER', KEYS[2], ARGV[1], ARGV[2])
if type(gate) == 'table' and gate.err then return 'NOGATE' end
local start = '0'
if ARGV[3] == '$' and redis.call('HEXISTS', KEYS[1] .. ':meta', 'origin') == 0 then start = '$' end
local created = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], start, 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP', 1, true) then
  return created
end
return 'OK'
`,
};
