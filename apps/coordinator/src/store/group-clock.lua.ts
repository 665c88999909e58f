/**
 * Smallest step back of the Redis clock a group records (ms). Smaller ones make a heartbeat look
 * older by at most this, well inside the timers' tolerance; NTP steps rather than slews only past
 * 128 ms.
 */
export const CLOCK_BACK_MIN_MS = 100;

/**
 * Lua prologue of every group script that reads the Redis clock to time a heartbeat or a scan
 * (docs/protocol.md §4.6). It defines `groupNow(record)`: Redis `TIME` in ms and, when `record`
 * is true (the group exists or is being created), the group's record of that clock in its meta
 * hash `KEYS[1]` (kept in a deleted group's tombstone, so a re-creation carries it on):
 * - `clockHigh`: the latest time a group script saw;
 * - `clockBack`: set while the clock reads more than {@link CLOCK_BACK_MIN_MS} below `clockHigh`
 *   (it stepped back), to the largest such distance seen;
 * - `clockRestoredAt`, `clockRestoredFrom`: when a script first saw the clock back at or past
 *   `clockHigh` after that, and by how much it had been back.
 *
 * Heartbeats made while the clock was back are timed up to `clockBack` too early once it is
 * forward again, so the session timers hold the group's expiries for a session timeout from
 * `clockRestoredAt` — also when no replica scanned while the clock was back. Writes use
 * `redis.pcall`: refused at maxmemory, the script still answers, and a step back stays noted until
 * a later call can record its return.
 */
export const GROUP_CLOCK_LUA = `
local function groupNow(record)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if not record then return now end
  local c = redis.call('HMGET', KEYS[1], 'clockHigh', 'clockBack')
  local high = tonumber(c[1] or '0')
  if now < high - ${CLOCK_BACK_MIN_MS} then
    local back = high - now
    if back > tonumber(c[2] or '0') then redis.pcall('HSET', KEYS[1], 'clockBack', back) end
    return now
  end
  if c[2] then
    local set = redis.pcall('HSET', KEYS[1], 'clockRestoredAt', now, 'clockRestoredFrom', c[2])
    -- (the step back stays noted until its return is recorded)
    if type(set) == 'table' and set.err then return now end
    redis.pcall('HDEL', KEYS[1], 'clockBack')
  end
  if now > high then redis.pcall('HSET', KEYS[1], 'clockHigh', now) end
  return now
end
`;
