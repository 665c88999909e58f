/**
 * A `TIME` reply (seconds, microseconds; strings on the wire, typed as numbers by ioredis) as
 * milliseconds since the epoch, rounded down.
 */
export function redisTimeMs(reply: readonly (string | number)[]): number {
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}
