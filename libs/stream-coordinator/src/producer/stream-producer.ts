import { Injectable } from '@nestjs/common';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';
import type {
  PublishBatchOptions,
  PublishMessage,
  PublishOptions,
} from './publish-options.interface.js';
import { createStreamPublisher } from './create-stream-publisher.js';
import type { StreamPublisher } from './stream-publisher.js';

/**
 * Publishes keyed messages to a stream: the key picks the shard through the coordinator's
 * routing metadata (cached; refreshed when a shard refuses a write with STALE_ROUTING during a
 * reshard), so messages of one key stay in order and are handled by one member at a time.
 * Works in publish-only applications (no handlers, no group membership).
 *
 * Entry encoding (for producers in other languages): fields `key`, `payload` (JSON text by
 * default, see the `serializer` option) and, when given, `headers` (a JSON object of strings);
 * written through a same-slot Lua script that refuses shards whose meta `state` is not `open`.
 *
 * @publicApi
 */
@Injectable()
export class StreamProducer {
  private publisher: StreamPublisher | undefined;

  constructor(
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
    private readonly connections: StreamCoordinatorConnections,
  ) {}

  private get core(): StreamPublisher {
    this.publisher ??= createStreamPublisher(this.options, this.connections.commands());
    return this.publisher;
  }

  /**
   * Publishes one message; resolves to its entry id.
   *
   * @param stream logical stream (`orders`)
   * @param key routing key (for example a customer id): same key → same shard, in order
   * @param payload encoded with the module's serializer (JSON by default)
   */
  publish(
    stream: string,
    key: string,
    payload: unknown,
    options?: PublishOptions,
  ): Promise<string> {
    return this.core.publish(stream, key, payload, options);
  }

  /** Publishes many messages (one round trip per shard); resolves to their ids in input order. */
  publishBatch(
    stream: string,
    messages: readonly PublishMessage[],
    options?: PublishBatchOptions,
  ): Promise<string[]> {
    return this.core.publishBatch(stream, messages, options);
  }
}
