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

/**
 * Lua helper: XACK the entry ids listed in `ARGV[index]` — one argument, the ids joined with
 * `,` (see {@link joinEntryIds}; `''` for none) — on `KEYS[1]` for group `ARGV[1]`, in chunks of
 * 1,000 (Lua's `unpack` has a stack limit). Returns how many entries were acknowledged.
 *
 * One argument instead of one per id: a batch of 100 acks is then one short command for the
 * client to build and write instead of ~100 arguments (measured: building and writing the
 * per-id form took ≈ 7 % of a member's busy time at batch 100; the split costs Redis ≈ 11 µs
 * per 100 ids).
 */
export const ACK_LIST_LUA = `
local function ack_list(index)
  local acked = 0
  local ids = {}
  for id in string.gmatch(ARGV[index], '[^,]+') do
    ids[#ids + 1] = id
    if #ids == 1000 then
      acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
      ids = {}
    end
  end
  if #ids > 0 then acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids)) end
  return acked
end
`;

/**
 * The one-argument form of entry ids that {@link ACK_LIST_LUA} reads: the ids joined with `,`
 * (a stream entry id `<ms>-<seq>` never holds one).
 */
export function joinEntryIds(ids: readonly string[]): string {
  return ids.join(',');
}
