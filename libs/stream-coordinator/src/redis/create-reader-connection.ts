import {
  attachErrorLogging,
  createRedisConnection,
  type CreateRedisConnectionExtras,
} from './create-redis-connection.js';
import { DirectReaderClient } from './direct/direct-reader-client.js';
import { directReaderEndpoint } from './direct/direct-reader-endpoint.js';
import { READER_CLIENT } from './reader-client.js';
import { redisUrlScheme } from './redis-url.js';
import type { RedisConnectionOptions } from '../interfaces/redis-connection-options.interface.js';
import type { ReaderRedis } from './redis-connection.types.js';

/**
 * A new dedicated connection for one shard reader. With `readerClient: 'direct'` (the default)
 * and a standalone Redis, a {@link DirectReaderClient}; otherwise (Cluster, Sentinel, an ioredis
 * option the direct connection does not implement, or `readerClient` `'bundled'` /
 * `'application'`) an ioredis client from {@link createRedisConnection}.
 *
 * The `redis` option is resolved by ioredis 5 itself (a client built with `lazyConnect`, which
 * opens no socket, then dropped), so a URL, its query and every default mean what they mean for
 * the other readers.
 *
 * @throws RedisConnectionOptionsError for malformed options, as `createRedisConnection`.
 */
export function createReaderConnection(
  options: RedisConnectionOptions,
  extras: CreateRedisConnectionExtras = {},
): ReaderRedis {
  if ((extras.readerClient ?? 'direct') === 'direct' && !needsIoredis(options)) {
    const probe = createRedisConnection(options, 'reader', {
      ...extras,
      readerClient: 'bundled',
      lazyConnect: true,
      logger: undefined,
    });
    if (probe instanceof READER_CLIENT.Redis) {
      // ioredis's defaults, as it resolves them for a client given no options
      const defaults = new READER_CLIENT.Redis({ lazyConnect: true }).options;
      const endpoint = directReaderEndpoint(probe.options, defaults);
      if (!('unsupported' in endpoint)) {
        const connection = new DirectReaderClient(endpoint);
        attachErrorLogging(connection, 'reader', extras.logger, extras.errorLog);
        return connection;
      }
      extras.logger?.debug?.(
        `shard readers use the bundled ioredis 5, not a direct connection: ${endpoint.unsupported}`,
      );
    }
  }
  return createRedisConnection(options, 'reader', extras);
}

/**
 * Options that rule a direct connection out before ioredis resolves them: a Cluster, Sentinel
 * nodes, or a custom `Connector` (which resolving would construct: user code, run for nothing).
 */
function needsIoredis(options: RedisConnectionOptions): boolean {
  if (typeof options === 'string') return redisUrlScheme(options)?.endsWith('+cluster') === true;
  if (typeof options !== 'object' || options === null) return false;
  const given = options as Record<string, unknown>;
  return 'cluster' in given || Boolean(given.sentinels) || Boolean(given.Connector);
}
