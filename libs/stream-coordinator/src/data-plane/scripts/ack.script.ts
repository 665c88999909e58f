import type { LuaScript } from '../../redis/lua-script.js';
import { ACK_FROM_LUA, FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `ack` — fence check, then XACK the given ids (none: a pure fence check).
 *
 * KEYS: shard stream, meta hash. ARGV: group, memberId, id….
 * Reply: how many entries were acknowledged.
 */
export const ACK_SCRIPT: LuaScript = {
  name: 'rscAck',
  numberOfKeys: 2,
  lua: `${FENCE_CHECK_LUA}${ACK_FROM_LUA}
return ack_from(3)
`,
};
