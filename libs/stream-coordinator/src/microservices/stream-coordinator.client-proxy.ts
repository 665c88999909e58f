import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { ClientProxyNotConnectedError } from '../errors/microservices/client-proxy-not-connected.error.js';
import { PublishArgumentError } from '../errors/producer/publish-argument.error.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { StreamCoordinatorModuleOptions } from '../interfaces/stream-coordinator-options.interface.js';
import { resolveStreamCoordinatorOptions } from '../options/stream-coordinator-options.validation.js';
import { createStreamPublisher } from '../producer/create-stream-publisher.js';
import type { StreamPublisher } from '../producer/stream-publisher.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';

/**
 * What `emit(stream, event)` takes: the routing key, the payload, optional headers.
 *
 * @publicApi
 */
export interface StreamEvent<T = unknown> {
  readonly key: string;
  readonly value: T;
  readonly headers?: Record<string, string>;
}

/**
 * A `ClientProxy` that publishes to streams, routed like `StreamProducer` (same routing, same
 * STALE_ROUTING handling): `client.emit('orders', { key: order.customerId, value: order })`
 * completes with the entry id. `send()` is not supported (streams carry events).
 *
 * @publicApi
 */
export class StreamCoordinatorClientProxy extends ClientProxy {
  private readonly options: ResolvedStreamCoordinatorOptions;
  private connections: StreamCoordinatorConnections | null = null;
  private publisher: StreamPublisher | null = null;

  /** @throws InvalidModuleOptionsError as `StreamCoordinatorModule.forRoot` would. */
  constructor(options: StreamCoordinatorModuleOptions) {
    super();
    this.options = resolveStreamCoordinatorOptions({ ...options, publishOnly: true });
  }

  async connect(): Promise<StreamPublisher> {
    if (!this.publisher) {
      this.connections = new StreamCoordinatorConnections(this.options);
      this.publisher = createStreamPublisher(this.options, this.connections.commands());
    }
    return this.publisher;
  }

  async close(): Promise<void> {
    await this.connections?.onApplicationShutdown();
    this.connections = null;
    this.publisher = null;
  }

  unwrap<T>(): T {
    if (!this.publisher) throw new ClientProxyNotConnectedError();
    return this.publisher as T;
  }

  protected publish(_packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    callback({
      err: new PublishArgumentError(
        'send() is not supported by StreamCoordinatorClientProxy: use emit(stream, { key, value })',
      ),
      isDisposed: true,
    });
    return () => undefined;
  }

  protected async dispatchEvent<T = string>(packet: ReadPacket): Promise<T> {
    const stream = String(packet.pattern);
    const event = packet.data as Partial<StreamEvent> | null;
    if (typeof event !== 'object' || event === null || typeof event.key !== 'string') {
      throw new PublishArgumentError(
        `emit(${JSON.stringify(stream)}, event): event must be { key: string, value, headers? }`,
      );
    }
    const publisher = await this.connect();
    const id = await publisher.publish(
      stream,
      event.key,
      event.value,
      event.headers ? { headers: event.headers } : {},
    );
    return id as T;
  }
}
