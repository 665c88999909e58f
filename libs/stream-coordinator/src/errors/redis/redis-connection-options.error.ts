import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Thrown when the `redis` option cannot be turned into a connection: a malformed URL, an unknown
 * scheme, an empty or malformed cluster node list, or an option the data plane cannot honour.
 */
export class RedisConnectionOptionsError extends StreamCoordinatorError {
  override readonly name = 'RedisConnectionOptionsError';

  constructor(message: string) {
    super(
      `Invalid Redis connection options: ${message}. Expected a URL (redis://host:port, ` +
        `rediss://host:port, redis+cluster://h1:p1,h2:p2), ioredis options, or ` +
        `{ cluster: [{ host, port }, ...] }.`,
    );
  }
}
