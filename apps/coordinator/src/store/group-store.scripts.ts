import type { LuaScript } from '@redis-stream-coordinator/nestjs/internal';

/**
 * Lua scripts of the group store. Every script touches only the keys of one group, which share
 * the hash tag `{@g:<group>}`, so they run on Redis Cluster too. KEYS are always:
 * 1 meta (hash), 2 members (hash), 3 targets (hash), 4 seen (sorted set: member → last heartbeat,
 * Redis clock ms), 5 events (stream).
 */

/**
 * Compare-and-set write of one change. ARGV[1] is a JSON payload:
 * `{v, c, ci, nv, nci, meta?, fences?, mset?, mdel?, tset?, tdel?, touch?, sdel?, stale?, events?, maxlen, minAgeMs, cpEvery?}`.
 * `ci` is the identity of the commit the change was computed on (`commitId`, `''` for a new
 * group) and `nci` the new commit's (random, unique): a version number alone is not an identity —
 * after Redis loses acknowledged writes (a failover, AOF `everysec`) another replica can write a
 * different change under the same version number.
 * The commit that creates the group (current version 0) sets `createdAt`, the incarnation, from
 * the Redis clock — never from a replica's copy — but always above the `incarnationFloor` a
 * deletion left (the deleted incarnation's `createdAt`: fence orders compare incarnations, and a
 * re-creation within the same millisecond, or on a Redis whose clock is behind the one that
 * created the deleted incarnation — after a failover — would otherwise be stamped at or below it
 * and every fence write refused), and writes it into its events in place of the placeholder
 * `"createdAt":-1`.
 * Checkpoints (event-log projections, see `apps/coordinator/src/projections/`): after the events,
 * when the group was never checkpointed, when `cpEvery` events were appended since the last
 * checkpoint, or (age-based retention) when half of `minAgeMs` passed since it, a
 * `GROUP_CHECKPOINT` entry with the whole group as stored (`{v, meta, m: HGETALL members,
 * t: HGETALL targets}`) is appended, so a rebuild never needs an entry the retention trimmed.
 * `fences` (a JSON string) is stored in the meta hash as `pendingFences`: the data-plane fence
 * writes this change implies, kept so that whoever loads the group next can re-apply them if the
 * writer died before it wrote them (they are version-ordered, so re-applying is always safe). A
 * change without fence writes deletes it, so `pendingFences` always belongs to the current commit;
 * the writer deletes it once written (`CLEAR_PENDING_FENCES_SCRIPT`).
 * Refuses (returns `{0, currentVersion}`) unless `meta.version == v` and, for an existing group,
 * `meta.createdAt == c` (versions restart when a group is deleted and created again, so the
 * version alone could match a stale copy of the old incarnation) and `meta.commitId == ci`;
 * refuses with `{-1, ...}` when a `stale` condition no longer holds (a member meant to expire has
 * heartbeated since its cutoff or, when the condition gives the time the scan read, that time
 * changed: any heartbeat or rejoin since rewrites it, also one timed below the cutoff after a
 * step back of the clock, and so does a scan lowering it). On success returns
 * `{1, nowMs, createdAt}`. All or nothing: nothing is written before the checks pass.
 */
export const COMMIT_SCRIPT: LuaScript = {
  name: 'rscCoordCommit',
  numberOfKeys: 5,
  lua: `
local p = cjson.decode(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if cur ~= p.v then return {0, cur} end
local stored = redis.call('HMGET', KEYS[1], 'createdAt', 'commitId')
if cur > 0 and stored[1] and stored[1] ~= p.c then return {0, cur} end
if cur > 0 and stored[2] and stored[2] ~= p.ci then return {0, cur} end
if p.stale then
  for _, c in ipairs(p.stale) do
    local s = redis.call('ZSCORE', KEYS[4], c[1])
    if c[3] and (not s or tonumber(s) ~= tonumber(c[3])) then return {-1, cur} end
    if s and tonumber(s) > tonumber(c[2]) then return {-1, cur} end
  end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'version', p.nv, 'commitId', p.nci)
if p.meta then
  for k, val in pairs(p.meta) do redis.call('HSET', KEYS[1], k, val) end
end
local created = redis.call('HGET', KEYS[1], 'createdAt')
if cur == 0 then
  local floor = tonumber(redis.call('HGET', KEYS[1], 'incarnationFloor') or '0')
  created = tostring(math.max(now, floor + 1))
  redis.call('HDEL', KEYS[1], 'incarnationFloor')
  redis.call('HSET', KEYS[1], 'createdAt', created)
  if p.events then
    for _, e in ipairs(p.events) do e[3] = string.gsub(e[3], '"createdAt":%-1([,}])', '"createdAt":' .. created .. '%1') end
  end
end
if p.fences then redis.call('HSET', KEYS[1], 'pendingFences', p.fences)
else redis.call('HDEL', KEYS[1], 'pendingFences') end
if p.mset then for _, e in ipairs(p.mset) do redis.call('HSET', KEYS[2], e[1], e[2]) end end
if p.mdel then for _, id in ipairs(p.mdel) do redis.call('HDEL', KEYS[2], id) end end
if p.tset then for _, e in ipairs(p.tset) do redis.call('HSET', KEYS[3], e[1], e[2]) end end
if p.tdel then for _, id in ipairs(p.tdel) do redis.call('HDEL', KEYS[3], id) end end
if p.sdel then for _, id in ipairs(p.sdel) do redis.call('ZREM', KEYS[4], id) end end
if p.touch then redis.call('ZADD', KEYS[4], now, p.touch) end
local minid = nil
if p.minAgeMs and p.minAgeMs > 0 then minid = tostring(now - p.minAgeMs) end
local function append(etype, epoch, data)
  if minid then
    redis.call('XADD', KEYS[5], 'MINID', '~', minid, '*', 'type', etype, 'at', now, 'groupEpoch', epoch, 'data', data)
  else
    redis.call('XADD', KEYS[5], 'MAXLEN', '~', p.maxlen, '*', 'type', etype, 'at', now, 'groupEpoch', epoch, 'data', data)
  end
end
if p.events then
  for _, e in ipairs(p.events) do append(e[1], e[2], e[3]) end
end
if p.cpEvery and p.cpEvery > 0 and p.events and #p.events > 0 then
  local since = redis.call('HINCRBY', KEYS[1], 'eventsSinceCheckpoint', #p.events)
  local cpAt = tonumber(redis.call('HGET', KEYS[1], 'checkpointAt') or '-1')
  local due = cpAt < 0 or since >= p.cpEvery or (p.minAgeMs and p.minAgeMs > 0 and now - cpAt >= p.minAgeMs / 2)
  if due then
    local m = redis.call('HMGET', KEYS[1], 'groupEpoch', 'assignmentEpoch', 'createdAt', 'metadataSignature')
    local snap = {
      v = p.nv,
      meta = { groupEpoch = m[1] or '0', assignmentEpoch = m[2] or '0', createdAt = m[3] or '0', metadataSignature = m[4] or '' },
      m = redis.call('HGETALL', KEYS[2]),
      t = redis.call('HGETALL', KEYS[3]),
    }
    append('GROUP_CHECKPOINT', m[1] or '0', cjson.encode(snap))
    redis.call('HSET', KEYS[1], 'eventsSinceCheckpoint', 0, 'checkpointAt', now)
  end
end
return {1, now, created}
`,
};

/**
 * A heartbeat that changes nothing: records the member's heartbeat time if the group is still at
 * the commit the replica computed against. ARGV: expected version, expected `createdAt`, expected
 * `commitId`, then the member ids (batched heartbeats; none: only checks). Returns `{1, nowMs}` or
 * `{0, currentVersion}`.
 */
export const TOUCH_SCRIPT: LuaScript = {
  name: 'rscCoordTouch',
  numberOfKeys: 5,
  lua: `
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if cur ~= tonumber(ARGV[1]) then return {0, cur} end
local stored = redis.call('HMGET', KEYS[1], 'createdAt', 'commitId')
if cur > 0 and stored[1] and stored[1] ~= ARGV[2] then return {0, cur} end
if cur > 0 and stored[2] and stored[2] ~= ARGV[3] then return {0, cur} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 4, #ARGV do
  if ARGV[i] ~= '' then redis.call('ZADD', KEYS[4], now, ARGV[i]) end
end
return {1, now}
`,
};

/**
 * Deletes the `pendingFences` record once its fence writes are all applied, if it still belongs to
 * the commit they were for (ARGV[1], its `commitId`): so a reload does not replay them again.
 * KEYS[1] is the meta hash. Returns 1 when deleted.
 */
export const CLEAR_PENDING_FENCES_SCRIPT: LuaScript = {
  name: 'rscCoordClearPendingFences',
  numberOfKeys: 1,
  lua: `
if redis.call('HGET', KEYS[1], 'commitId') ~= ARGV[1] then return 0 end
return redis.call('HDEL', KEYS[1], 'pendingFences')
`,
};

/**
 * Session scan: returns `{nowMs, version, revokeDeadline, id1, seen1, id2, seen2, ...}` — members
 * whose last heartbeat is older than ARGV[1] ms, each with that heartbeat's time (an expiry commits
 * only if it is unchanged). `revokeDeadline` is the earliest time a member's rebalance timeout can
 * run out (`-1`: nobody is revoking; `-2`: not recorded). A last heartbeat later than now (the
 * Redis clock stepped back since it was timed) is set to now first: otherwise a member that
 * stopped just before the step would keep its shards for the length of the step.
 */
export const SCAN_SCRIPT: LuaScript = {
  name: 'rscCoordScan',
  numberOfKeys: 5,
  lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local meta = redis.call('HMGET', KEYS[1], 'version', 'revokeDeadline')
local cur = tonumber(meta[1] or '0')
local deadline = -2
if meta[2] then deadline = tonumber(meta[2]) or -1 end
local ahead = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf')
-- (pcall: refused at maxmemory, the scan still reports; the next one tries again)
for _, id in ipairs(ahead) do redis.pcall('ZADD', KEYS[4], now, id) end
local out = {now, cur, deadline}
local stale = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', '(' .. (now - tonumber(ARGV[1])), 'WITHSCORES')
for _, v in ipairs(stale) do out[#out + 1] = v end
return out
`,
};

/**
 * Deletes an empty group: only if at the expected commit (ARGV: version, `createdAt`, `commitId`)
 * and it has no members. Leaves the meta hash holding only `incarnationFloor` (the deleted
 * incarnation's `createdAt`, which the next creating commit stamps above; no `version`, so the
 * group does not exist): one small hash per deleted group name.
 */
export const DELETE_GROUP_SCRIPT: LuaScript = {
  name: 'rscCoordDeleteGroup',
  numberOfKeys: 5,
  lua: `
local cur = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if cur ~= tonumber(ARGV[1]) then return 0 end
local stored = redis.call('HMGET', KEYS[1], 'createdAt', 'commitId')
if stored[1] and stored[1] ~= ARGV[2] then return 0 end
if stored[2] and stored[2] ~= ARGV[3] then return 0 end
if redis.call('HLEN', KEYS[2]) > 0 then return -1 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if stored[1] then redis.call('HSET', KEYS[1], 'incarnationFloor', stored[1]) end
return 1
`,
};
