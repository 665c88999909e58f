/**
 * No Redis for the tests: `REDIS_URL` is set but nothing answers there, or none of the fallbacks
 * (local default port, Docker, `redis-server` on PATH) worked. The message says how to get one.
 */
export class RedisUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisUnavailableError';
  }
}
