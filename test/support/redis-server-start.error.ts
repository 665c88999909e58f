/** A `redis-server` process could not be started or did not become ready in time. */
export class RedisServerStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RedisServerStartError';
  }
}
