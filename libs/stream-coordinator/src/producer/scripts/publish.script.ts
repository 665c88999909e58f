import type { LuaScript } from '../../redis/lua-script.js';

/**
 * `publish` — appends entries to a shard only while the shard is open: the meta hash's `state`
 * must be `open`, otherwise (closed, or the meta hash is gone because the shard was removed)
 * it writes nothing and returns the error reply `STALE_ROUTING key=<key> state=<state or ->`.
 * The check and the writes are one atomic script, so once the coordinator sets `state` to
 * `closed` no producer can add to the shard.
 *
 * KEYS: shard stream (its meta hash `KEYS[1] .. ':meta'` is read undeclared: docs/protocol.md §13.5).
 * ARGV: trim mode (`''`, `MAXLEN` or `MINID`), `~` or `=`,
 * trim threshold, then one triple per entry: key, payload, headers (`''` = none). Trimming is
 * applied on the last entry's XADD. Reply: the new entry ids, in order.
 */
export const PUBLISH_SCRIPT: LuaScript = {
  name: 'rscPublish',
  numberOfKeys: 1,
  lua: `
local state = redis.call('HGET', KEYS[1] .. ':meta', 'state')
if state ~= 'open' then
  return redis.error_reply('STALE_ROUTING key=' .. KEYS[1] .. ' state=' .. (state or '-'))
end
local ids = {}
local last = #ARGV - 2
for i = 4, last, 3 do
  local args = { 'XADD', KEYS[1] }
  if i == last and ARGV[1] ~= '' then
    args[3] = ARGV[1]
    args[4] = ARGV[2]
    args[5] = ARGV[3]
  end
  args[#args + 1] = '*'
  args[#args + 1] = 'key'
  args[#args + 1] = ARGV[i]
  args[#args + 1] = 'payload'
  args[#args + 1] = ARGV[i + 1]
  if ARGV[i + 2] ~= '' then
    args[#args + 1] = 'headers'
    args[#args + 1] = ARGV[i + 2]
  end
  ids[#ids + 1] = redis.call(unpack(args))
end
return ids
`,
};
