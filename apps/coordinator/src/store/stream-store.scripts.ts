import type { LuaScript } from '@redis-stream-coordinator/nestjs/internal';

/**
 * Compare-and-set write of one stream record. KEYS: 1 streams hash, 2 catalog version counter,
 * 3 the stream's event log (all under the `{@m}` hash tag). ARGV: stream name, expected record
 * version (0 = must not exist), record JSON, events JSON (`[[type, dataJson], …]`, appended in
 * order; may be empty), pub/sub channel. Returns `{1, catalogVersion}` or
 * `{0, currentRecordVersion}`.
 */
export const STREAM_WRITE_SCRIPT: LuaScript = {
  name: 'rscCoordStreamWrite',
  numberOfKeys: 3,
  lua: `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local curv = 0
if cur then curv = tonumber(cjson.decode(cur).version) end
if curv ~= tonumber(ARGV[2]) then return {0, curv} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
local cv = redis.call('INCR', KEYS[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, e in ipairs(cjson.decode(ARGV[4])) do
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', 'type', e[1], 'at', now, 'data', e[2])
end
redis.call('PUBLISH', ARGV[5], cv)
return {1, cv}
`,
};

/**
 * The whole catalog in one atomic read, so the version read always describes the records read.
 * KEYS: 1 streams hash, 2 catalog version counter. Returns `{version or 0, {name, json, …}}`.
 */
export const CATALOG_READ_SCRIPT: LuaScript = {
  name: 'rscCoordCatalogRead',
  numberOfKeys: 2,
  lua: `
return {tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('HGETALL', KEYS[1])}
`,
};

/**
 * Opens a shard for producers: KEYS 1 its meta hash, 2 its stream (same hash tag); ARGV[1] who
 * opens it (`opener`), ARGV[2] the `origin` to record (`''`: none), ARGV[3] `'1'` when this opener
 * takes over a shard that is open already (a reshard step, which owns its new shards), else `'0'`.
 *
 * Sets `state=open` only when the hash has no `state` yet (a new shard id), recording `opener`
 * and `origin` with it, and returns 2 (as when taking over). Returns 1 when it is open already
 * and it does not take over, recording neither: a creation or restore that finds a shard open (another replica's
 * creation, a reshard's) leaves it theirs, so its withdrawal ({@link WITHDRAW_SHARD_SCRIPT}) never
 * touches it. A restore records `origin` only on a shard whose stream has no consumer group yet,
 * adding it to one open already when it has none (a creation it raced opened it): once a group
 * consumes a shard it is live (an eviction of the meta hash alone leaves such), and a new `latest`
 * group skips its history as on any shard (docs/protocol.md §12.3). A reshard always records it. Returns 0
 * and changes nothing when it is `closed`: only the step that created a shard opens it, and a
 * closed shard is never reopened (by a replica that resumes a stale step).
 */
export const OPEN_SHARD_SCRIPT: LuaScript = {
  name: 'rscCoordOpenShard',
  numberOfKeys: 2,
  lua: `
local state = redis.call('HGET', KEYS[1], 'state')
if state and state ~= 'open' then return 0 end
local live = redis.call('EXISTS', KEYS[2]) == 1 and #redis.call('XINFO', 'GROUPS', KEYS[2]) > 0
if state and ARGV[3] ~= '1' then
  if ARGV[2] ~= '' and not live then redis.call('HSETNX', KEYS[1], 'origin', ARGV[2]) end
  return 1
end
redis.call('HSET', KEYS[1], 'state', 'open', 'opener', ARGV[1])
if ARGV[2] ~= '' and (ARGV[3] == '1' or not live) then
  redis.call('HSET', KEYS[1], 'origin', ARGV[2])
end
return 2
`,
};

/**
 * Withdraws a shard a creation or restore opened fresh and whose record lost to another replica's
 * record, which does not name it. KEYS: 1 the meta hash, 2 the shard's stream, 3 where to move
 * that stream (same hash tag). ARGV[1] the opener the loser recorded. Only while the shard is open
 * and `opener` is still that one (a step that took it over since keeps it): deletes `state`,
 * `origin` and `opener` (producers writing to it get `STALE_ROUTING` and refresh), deletes the
 * stream when it is empty and has no consumer group, and otherwise renames it to KEYS[3]: what
 * producers wrote to it meanwhile (or what an eviction of its meta hash alone left) is kept where
 * no member reads it, and a later reshard reusing the id does not deliver it after newer messages
 * of its keys. Returns 0 (not withdrawn: another opener's, or closed), 1 (withdrawn), 2 (withdrawn,
 * stream moved to KEYS[3]), 3 (withdrawn before, its stream in KEYS[3]: a retry after a reply that
 * was lost) or 4 (nothing open there: not opened yet, or withdrawn before with nothing to move).
 */
export const WITHDRAW_SHARD_SCRIPT: LuaScript = {
  name: 'rscCoordWithdrawShard',
  numberOfKeys: 3,
  lua: `
if redis.call('HGET', KEYS[1], 'opener') ~= ARGV[1] then
  if redis.call('EXISTS', KEYS[3]) == 1 then return 3 end
  if redis.call('HEXISTS', KEYS[1], 'state') == 0 then return 4 end
  return 0
end
if redis.call('HGET', KEYS[1], 'state') ~= 'open' then return 0 end
redis.call('HDEL', KEYS[1], 'state', 'origin', 'opener')
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
if redis.call('XLEN', KEYS[2]) == 0 and #redis.call('XINFO', 'GROUPS', KEYS[2]) == 0 then
  redis.call('DEL', KEYS[2])
  return 1
end
redis.call('RENAME', KEYS[2], KEYS[3])
return 2
`,
};

/**
 * Forgets that a reshard created a shard once the reshard is complete: KEYS[1] its meta hash.
 * Deletes `origin` only when it is `reshard` (a restored shard keeps its `restored`); returns 1
 * when it deleted it, 0 otherwise. Repeating it changes nothing (docs/protocol.md §12.3).
 */
export const CLEAR_RESHARD_ORIGIN_SCRIPT: LuaScript = {
  name: 'rscCoordClearReshardOrigin',
  numberOfKeys: 1,
  lua: `
if redis.call('HGET', KEYS[1], 'origin') ~= 'reshard' then return 0 end
redis.call('HDEL', KEYS[1], 'origin')
return 1
`,
};
