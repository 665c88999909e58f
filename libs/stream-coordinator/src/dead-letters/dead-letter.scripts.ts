import type { LuaScript } from '../redis/lua-script.js';

/**
 * `dlqClaim` — claims a dead-letter entry for a replay. KEYS: dead-letter stream, replays hash
 * (same slot). ARGV: entry id, claim token, lease (ms). Reply `{outcome, mark}`:
 * `missing` (no such entry), `done` (already replayed; its mark), `busy` (another replay holds
 * a live claim; its mark) or `claimed` (a `pending` mark with the token and Redis time is
 * written). A `pending` claim older than the lease is taken over: the replay that wrote it
 * crashed or failed between claiming and marking.
 */
export const DLQ_CLAIM_SCRIPT: LuaScript = {
  name: 'rscDlqClaim',
  numberOfKeys: 2,
  lua: `
if #redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1]) == 0 then return { 'missing', '' } end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local current = redis.call('HGET', KEYS[2], ARGV[1])
if current then
  local mark = cjson.decode(current)
  if mark.state == 'done' then return { 'done', current } end
  if mark.state == 'pending' and tonumber(mark.ms or 0) + tonumber(ARGV[3]) > now then
    return { 'busy', current }
  end
end
local mark = cjson.encode({ state = 'pending', token = ARGV[2], ms = now })
redis.call('HSET', KEYS[2], ARGV[1], mark)
return { 'claimed', mark }
`,
};

/**
 * `dlqFinish` — ends a claim. KEYS: replays hash. ARGV: entry id, claim token, then either
 * `done`, the new entry id and the shard key (the entry was re-published; Redis time is recorded), or
 * `release` (the publish failed: the claim is dropped). Only the holder of the claim (same
 * token, still `pending`) changes the mark. Reply: 1 when changed, 0 when the claim was lost.
 */
export const DLQ_FINISH_SCRIPT: LuaScript = {
  name: 'rscDlqFinish',
  numberOfKeys: 1,
  lua: `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if not current then return 0 end
local mark = cjson.decode(current)
if mark.state ~= 'pending' or mark.token ~= ARGV[2] then return 0 end
if ARGV[3] == 'release' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 1
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({ state = 'done', entryId = ARGV[4], shardKey = ARGV[5], ms = now }))
return 1
`,
};

/**
 * `dlqPurge` — deletes dead-letter entries and their replay marks. KEYS: dead-letter stream,
 * replays hash. ARGV: entry ids. Reply: how many entries were deleted.
 */
export const DLQ_PURGE_SCRIPT: LuaScript = {
  name: 'rscDlqPurge',
  numberOfKeys: 2,
  lua: `
local deleted = redis.call('XDEL', KEYS[1], unpack(ARGV))
redis.call('HDEL', KEYS[2], unpack(ARGV))
return deleted
`,
};

/**
 * `dlqPurgeAll` — deletes a dead-letter stream and its replay marks. KEYS: dead-letter stream,
 * replays hash. Reply: how many entries the stream held.
 */
export const DLQ_PURGE_ALL_SCRIPT: LuaScript = {
  name: 'rscDlqPurgeAll',
  numberOfKeys: 2,
  lua: `
local length = 0
if redis.call('EXISTS', KEYS[1]) == 1 then length = redis.call('XLEN', KEYS[1]) end
redis.call('DEL', KEYS[1], KEYS[2])
return length
`,
};
