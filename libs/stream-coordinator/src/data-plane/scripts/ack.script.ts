import type { LuaScript } from '../../redis/lua-script.js';
import { ACK_LIST_LUA } from './entry-id-list.js';
import { FENCE_CHECK_LUA } from './fence-check.lua.js';

/**
 * `ack` — fence check, then XACK the given ids (none: a pure fence check).
 *
 * KEYS: shard stream (its meta hash is derived, see FENCE_CHECK_LUA). ARGV: group, memberId, the ids as one argument (see `encodeEntryIds`).
 * Reply: how many entries were acknowledged.
 */
export const ACK_SCRIPT: LuaScript = {
  name: 'rscAck',
  numberOfKeys: 1,
  lua: `${FENCE_CHECK_LUA}${ACK_LIST_LUA}
return ack_list(3)
`,
};
