/**
 * Data-plane fence writes. KEYS[1] is a shard's meta hash (`<shardKey>:meta`, same hash tag as
 * the shard stream). The field `owner:<group>` holds `<version>:<memberId>`, where version is the
 * group version that made the decision; writes are ordered by it, so a delayed write from a
 * replica can never undo a newer decision.
 */

/**
 * Grant: set `ARGV[1]` to `ARGV[2]:ARGV[3]` unless a newer decision is already recorded, or the
 * same member already holds it (members are matched on the member id; returns 2 then).
 */
export const FENCE_GRANT_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local c = string.find(cur, ':', 1, true)
  if c then
    local v = tonumber(string.sub(cur, 1, c - 1))
    if v and v > tonumber(ARGV[2]) then return 0 end
    if string.sub(cur, c + 1) == ARGV[3] then return 2 end
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
return 1
`;

/** Release: delete `ARGV[1]` if it still names member `ARGV[3]` at a version ≤ `ARGV[2]`. */
export const FENCE_RELEASE_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local c = string.find(cur, ':', 1, true)
if not c then return 0 end
local v = tonumber(string.sub(cur, 1, c - 1))
if string.sub(cur, c + 1) ~= ARGV[3] or (v and v > tonumber(ARGV[2])) then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;
