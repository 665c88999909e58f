import type { LuaScript } from '@redis-stream-coordinator/nestjs/internal';

/**
 * Data-plane fence writes. KEYS[1] is a shard's meta hash (`<shardKey>:meta`, same hash tag as
 * the shard stream). Three fields per group:
 * - `owner:<group>` = `<version>:<memberId>`, the fence token members' data-plane scripts check
 *   before an ack, a claim or a redelivery (absent when nobody holds the shard);
 * - `gate:<group>` = the key of the owner's read gate (`shardGateKey`): an empty stream with a
 *   consumer group `<group>`, which the owner's plain `XREADGROUP … STREAMS <gate> <shard> > >`
 *   needs to read anything (Redis checks every key's group before serving);
 * - `fence-order:<group>` = `<incarnation>:<version>`, the decision the token reflects: the group's
 *   `createdAt` and the group version that made the decision; and `fence-commit:<group>` =
 *   `<incarnation>:<version>:<commitId>`, the identity of that commit (a separate field, so that a
 *   replica of a release without commit identities still reads the order).
 *
 * Token and gate change together, in one script: a grant names the new owner, creates its gate and
 * deletes the gate of whoever held the shard before; a release deletes the token and the gate. So a
 * gate exists exactly while the token names its member, and a member the shard moved away from can
 * no longer read — not even a read blocked at that moment: deleting a stream key unblocks its
 * blocked `XREADGROUP` clients with an `UNBLOCKED` error (Redis ≥ 7.0) before anything else runs.
 *
 * The previous gate is found through `gate:<group>` and, as a fallback, derived from the previous
 * token (`ARGV[7] .. memberId`). Those keys are not in KEYS, which is safe: they are built from the
 * shard key, whose hash tag comes first, so they live in the same slot (and on Redis Cluster on the
 * same node) as KEYS[1] (Redis 7 lets a script touch undeclared keys of its own slot); a recorded
 * key that does not start with `ARGV[7]` is ignored, so a script can never touch a key of another
 * slot. During a live migration of the slot, a gate already moved to the target node fails the call
 * part-way (a non-local key; Redis does not roll a script back): the write is re-applied — a
 * change's fence writes are stored with it and replayed by whoever loads the group next — and a
 * repeated grant or release at the same decision is idempotent, so it completes then. Meanwhile
 * the old owner cannot read either: its two-key read of a slot being migrated gets `TRYAGAIN`.
 *
 * Writes are ordered by `(incarnation, version)`: one older than the recorded decision is refused
 * (nothing changes, no gate is created or deleted), so a delayed write from a slow replica (or one
 * re-applied after a crash) can never undo a newer decision or resurrect an older owner's gate — not
 * a release either, since the order field outlives the token it deleted, and not across a deletion
 * and re-creation of the group (a new incarnation has a later `createdAt`). A write at the same
 * `(incarnation, version)` as the recorded decision but of another commit is refused too: two
 * commits share a version only when Redis lost the first one (a failover, an AOF `everysec`
 * restart), and a re-grant of the lost commit must not overrule the surviving one (an order
 * recorded without its commit, by an older release, accepts any).
 *
 * ARGV of both scripts: 1 owner field, 2 order field, 3 incarnation, 4 version, 5 gate field,
 * 6 group, 7 gate key prefix (`shardGateKey(shardKey, group, '')`), 8 commit id, 9 commit field,
 * 10 member id (grant only).
 * Grant KEYS: 1 meta hash, 2 the new owner's gate. Release KEYS: 1 meta hash.
 * Both return 1 when written, 0 when refused as older.
 */

const ORDER_CHECK = `
local mine = ARGV[3] .. ':' .. ARGV[4]
local order = redis.call('HGET', KEYS[1], ARGV[2])
if order then
  local c = string.find(order, ':', 1, true)
  local inc = c and tonumber(string.sub(order, 1, c - 1))
  local ver = c and tonumber(string.sub(order, c + 1))
  local my_inc, my_ver = tonumber(ARGV[3]), tonumber(ARGV[4])
  if inc and ver then
    if inc > my_inc or (inc == my_inc and ver > my_ver) then return 0 end
    if inc == my_inc and ver == my_ver then
      local commit = redis.call('HGET', KEYS[1], ARGV[9])
      if commit and string.sub(commit, 1, #mine + 1) == mine .. ':' and commit ~= mine .. ':' .. ARGV[8] then
        return 0
      end
    end
  end
end
redis.call('HSET', KEYS[1], ARGV[2], mine, ARGV[9], mine .. ':' .. ARGV[8])
`;

/** Deletes every gate of the group on this shard except `keep` (recorded, or the token's). */
const DROP_OLD_GATES = `
local function drop_old_gates(keep)
  local prefix = ARGV[7]
  local recorded = redis.call('HGET', KEYS[1], ARGV[5])
  if recorded and recorded ~= keep and string.sub(recorded, 1, #prefix) == prefix then
    redis.call('DEL', recorded)
  end
  local token = redis.call('HGET', KEYS[1], ARGV[1])
  local sep = token and string.find(token, ':', 1, true)
  if sep then
    local derived = prefix .. string.sub(token, sep + 1)
    if derived ~= keep and derived ~= recorded then redis.call('DEL', derived) end
  end
end
`;

/**
 * Grant: the token names member `ARGV[10]` at version `ARGV[4]` and its gate `KEYS[2]` exists
 * (created if missing; an existing one is kept, so a repeated grant or a re-grant to the same owner
 * does not disturb its blocked read); any other gate of the group on this shard is deleted. Refused
 * when a newer decision is recorded.
 */
export const FENCE_GRANT_SCRIPT: LuaScript = {
  name: 'rscCoordFenceGrant',
  numberOfKeys: 2,
  lua: `${ORDER_CHECK}${DROP_OLD_GATES}
drop_old_gates(KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4] .. ':' .. ARGV[10], ARGV[5], KEYS[2])
local created = redis.pcall('XGROUP', 'CREATE', KEYS[2], ARGV[6], '$', 'MKSTREAM')
if type(created) == 'table' and created.err and not string.find(created.err, 'BUSYGROUP', 1, true) then
  return created
end
return 1
`,
};

/**
 * Release: nobody holds the shard as of version `ARGV[4]`: token, gate record and gate deleted.
 * Refused when a newer decision is recorded.
 */
export const FENCE_RELEASE_SCRIPT: LuaScript = {
  name: 'rscCoordFenceRelease',
  numberOfKeys: 1,
  lua: `${ORDER_CHECK}${DROP_OLD_GATES}
drop_old_gates(false)
redis.call('HDEL', KEYS[1], ARGV[1], ARGV[5])
return 1
`,
};

/**
 * Deletes a removed shard: its stream (KEYS[1]), its meta hash (KEYS[2]) and every read gate left
 * on it — those recorded in `gate:<group>` fields and those derived from `owner:<group>` tokens
 * (`<shardKey>:gate:<group>:<memberId>`), all in the shard's slot. Atomic, so no grant can slip a
 * gate in between. Returns the number of keys deleted.
 */
export const SHARD_DELETE_SCRIPT: LuaScript = {
  name: 'rscCoordShardDelete',
  numberOfKeys: 2,
  lua: `
local prefix = KEYS[1] .. ':gate:'
local doomed = { KEYS[1], KEYS[2] }
local meta = redis.call('HGETALL', KEYS[2])
for i = 1, #meta, 2 do
  local field, value = meta[i], meta[i + 1]
  if string.sub(field, 1, 5) == 'gate:' and string.sub(value, 1, #prefix) == prefix then
    doomed[#doomed + 1] = value
  elseif string.sub(field, 1, 6) == 'owner:' then
    local sep = string.find(value, ':', 1, true)
    if sep then
      doomed[#doomed + 1] = prefix .. string.sub(field, 7) .. ':' .. string.sub(value, sep + 1)
    end
  end
end
local deleted = 0
for _, key in ipairs(doomed) do deleted = deleted + redis.call('DEL', key) end
return deleted
`,
};
