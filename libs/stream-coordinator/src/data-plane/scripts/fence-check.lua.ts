/**
 * Lua prologue of every fenced data-plane script. Calling convention:
 * `KEYS[1]` = shard stream, `ARGV[1]` = group, `ARGV[2]` = member id. The meta hash
 * (`KEYS[1] .. ':meta'`, same hash tag) is read without being declared: Redis ACLs count every
 * declared key of EVAL as written, so a member user allowed only to read meta hashes could not
 * run the script otherwise (docs/protocol.md §13.5). The meta field `owner:<group>` must hold a fence token
 * `<version>:<memberId>` naming this member; otherwise the script returns the error reply
 * `FENCED owner=<token or -> key=<shard key> group=<group>` before touching anything.
 */
export const FENCE_CHECK_LUA = `
local owner = redis.call('HGET', KEYS[1] .. ':meta', 'owner:' .. ARGV[1])
local sep = owner and string.find(owner, ':', 1, true)
if not sep or sep == 1 or not tonumber(string.sub(owner, 1, sep - 1))
    or string.sub(owner, sep + 1) ~= ARGV[2] then
  return redis.error_reply('FENCED owner=' .. (owner or '-') .. ' key=' .. KEYS[1] .. ' group=' .. ARGV[1])
end
`;
