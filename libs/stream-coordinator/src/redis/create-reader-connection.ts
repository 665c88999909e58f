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
  if ((extras.readerClient ?? 'direct') === 'direct') {
    const direct = directConnection(options, extras);
    if (direct instanceof DirectReaderClient) return direct;
    extras.logger?.debug?.(
      `shard readers use the bundled ioredis 5, not a direct connection: ${direct}`,
    );
  }
  return createRedisConnection(options, 'reader', extras);
}

/** A direct connection for `options`, or why there cannot be one. */
function directConnection(
  options: RedisConnectionOptions,
  extras: CreateRedisConnectionExtras,
): DirectReaderClient | string {
  const ruledOut = needsIoredis(options);
  if (ruledOut !== undefined) return ruledOut;
  const probe = createRedisConnection(options, 'reader', {
    ...extras,
    readerClient: 'bundled',
    lazyConnect: true,
    logger: undefined,
  });
  if (!(probe instanceof READER_CLIENT.Redis)) return 'the options name a Cluster';
  // ioredis's defaults, as it resolves them for a client given no options
  const defaults = new READER_CLIENT.Redis({ lazyConnect: true }).options;
  const endpoint = directReaderEndpoint(probe.options, defaults);
  if ('unsupported' in endpoint) return endpoint.unsupported;
  const connection = new DirectReaderClient(endpoint);
  attachErrorLogging(connection, 'reader', extras.logger, extras.errorLog);
  return connection;
}

/**
 * Why `options` rule a direct connection out before ioredis resolves them, if they do: a Cluster,
 * Sentinel nodes, or a custom `Connector` (which resolving would construct: user code, run for
 * nothing).
 */
function needsIoredis(options: RedisConnectionOptions): string | undefined {
  if (typeof options === 'string') {
    return redisUrlScheme(options)?.endsWith('+cluster') === true
      ? 'the options name a Cluster'
      : undefined;
  }
  if (typeof options !== 'object' || options === null) return undefined;
  const given = options as Record<string, unknown>;
  if ('cluster' in given) return 'the options name a Cluster';
  if (given.sentinels) return 'the options name Sentinel nodes';
  if (given.Connector) return 'the options give a custom Connector';
  return undefined;
}
