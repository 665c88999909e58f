/**
 * Data-plane fence writes. KEYS[1] is a shard's meta hash (`<shardKey>:meta`, same hash tag as
 * the shard stream). Two fields per group:
 * - `owner:<group>` = `<version>:<memberId>`, the fence token members' data-plane scripts check
 *   (absent when nobody holds the shard);
 * - `fence-order:<group>` = `<incarnation>:<version>`, the decision the token reflects: the group's
 *   `createdAt` and the group version that made the decision.
 *
 * Writes are ordered by `(incarnation, version)`: one older than the recorded decision is refused,
 * so a delayed write from a slow replica (or one re-applied after a crash) can never undo a newer
 * decision — not a release either, since the order field outlives the token it deleted, and not
 * across a deletion and re-creation of the group (a new incarnation has a later `createdAt`).
 *
 * ARGV of both scripts: 1 owner field, 2 order field, 3 incarnation, 4 version, 5 member id
 * (grant only). Both return 1 when written, 0 when refused as older.
 */

const ORDER_CHECK = `
local order = redis.call('HGET', KEYS[1], ARGV[2])
if order then
  local c = string.find(order, ':', 1, true)
  local inc = c and tonumber(string.sub(order, 1, c - 1))
  local ver = c and tonumber(string.sub(order, c + 1))
  local my_inc, my_ver = tonumber(ARGV[3]), tonumber(ARGV[4])
  if inc and ver and (inc > my_inc or (inc == my_inc and ver > my_ver)) then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3] .. ':' .. ARGV[4])
`;

/** Grant: the token names member `ARGV[5]` at version `ARGV[4]`, unless a newer decision is recorded. */
export const FENCE_GRANT_SCRIPT = `${ORDER_CHECK}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4] .. ':' .. ARGV[5])
return 1
`;

/** Release: nobody holds the shard as of version `ARGV[4]` (token deleted), unless a newer decision is recorded. */
export const FENCE_RELEASE_SCRIPT = `${ORDER_CHECK}
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
`;
