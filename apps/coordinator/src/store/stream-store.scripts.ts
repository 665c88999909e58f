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
 * Opens a shard for producers: KEYS[1] its meta hash. Sets `state=open` only when the hash has no
 * `state` yet (a new shard id) and returns 1, or 1 when it is open already; returns 0 and changes
 * nothing when it is `closed`: only the step that created a shard opens it, and a closed shard is
 * never reopened (by a replica that resumes a stale step, say).
 */
export const OPEN_SHARD_SCRIPT: LuaScript = {
  name: 'rscCoordOpenShard',
  numberOfKeys: 1,
  lua: `
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'open' then return 1 end
if state then return 0 end
redis.call('HSET', KEYS[1], 'state', 'open')
return 1
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
