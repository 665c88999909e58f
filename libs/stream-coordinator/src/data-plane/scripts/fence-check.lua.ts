/**
 * Lua prologue of every fenced data-plane script. Calling convention:
 * `KEYS[1]` = shard stream, `KEYS[2]` = its meta hash (same hash tag), `ARGV[1]` = group,
 * `ARGV[2]` = member id. The meta field `owner:<group>` must hold a fence token
 * `<version>:<memberId>` naming this member; otherwise the script returns the error reply
 * `FENCED owner=<token or -> key=<shard key> group=<group>` before touching anything.
 */
export const FENCE_CHECK_LUA = `
local owner = redis.call('HGET', KEYS[2], 'owner:' .. ARGV[1])
local sep = owner and string.find(owner, ':', 1, true)
if not sep or sep == 1 or not tonumber(string.sub(owner, 1, sep - 1))
    or string.sub(owner, sep + 1) ~= ARGV[2] then
  return redis.error_reply('FENCED owner=' .. (owner or '-') .. ' key=' .. KEYS[1] .. ' group=' .. ARGV[1])
end
`;

/**
 * Lua helper: XACK `ARGV[first..]` on `KEYS[1]` for group `ARGV[1]`, in chunks (Lua's `unpack`
 * has a stack limit). Returns how many entries were acknowledged.
 */
export const ACK_FROM_LUA = `
local function ack_from(first)
  local acked = 0
  local i = first
  while i <= #ARGV do
    local j = math.min(i + 999, #ARGV)
    acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, i, j))
    i = j + 1
  end
  return acked
end
`;
