import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import { CoordinatorClient } from '../runtime/coordinator-client.js';
import { RoutingCache } from './routing-cache.js';
import { StreamPublisher } from './stream-publisher.js';

/**
 * The publisher behind `StreamProducer` and `StreamCoordinatorClientProxy`: routing fetched from
 * the coordinator (cached), writes on `connection`, the module's serializer.
 *
 * @internal
 */
export function createStreamPublisher(
  options: ResolvedStreamCoordinatorOptions,
  connection: RedisConnection,
): StreamPublisher {
  return new StreamPublisher({
    connection,
    routing: new RoutingCache(
      new CoordinatorClient({
        baseUrl: options.coordinatorUrl,
        token: options.token,
        requestTimeoutMs: options.requestTimeoutMs,
      }),
    ),
    serializer: options.serializer,
  });
}
