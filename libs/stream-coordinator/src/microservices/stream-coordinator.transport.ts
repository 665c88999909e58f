import type { DynamicModule } from '@nestjs/common';
import { CustomTransportStrategy, type MessageHandler, Server } from '@nestjs/microservices';
import { isObservable, lastValueFrom } from 'rxjs';
import type { StreamShardContext } from '../context/stream-shard.context.js';
import { withNonRetryable } from '../discovery/non-retryable-failures.js';
import { StreamHandlerRegistry } from '../discovery/stream-handler.registry.js';
import { EmptyEventResultError } from '../errors/empty-event-result.error.js';
import { EventHandlerFailedError } from '../errors/event-handler-failed.error.js';
import { InvalidModuleOptionsError } from '../errors/invalid-module-options.error.js';
import { TransportEventsUnsupportedError } from '../errors/microservices/transport-events-unsupported.error.js';
import { TransportNotListeningError } from '../errors/microservices/transport-not-listening.error.js';
import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import { plainShardMessage } from '../data-plane/plain-shard-message.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import type { StreamCoordinatorModuleOptions } from '../interfaces/stream-coordinator-options.interface.js';
import {
  collectHandlerOptionIssues,
  mergeHandlerOptions,
  resolveStreamCoordinatorOptions,
} from '../options/stream-coordinator-options.validation.js';
import { ShutdownDrain, StreamCoordinatorDrainModule } from '../runtime/shutdown-drain.module.js';
import { isValidName } from '../protocol/limits.js';
import { MemberRuntime } from '../runtime/member-runtime.js';
import { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';

/** Token of the provider that registers a transport's drain (see `drainModule`). */
const TRANSPORT_DRAIN = Symbol('StreamCoordinatorTransportDrain');

/** What `lastValueFrom` resolves to for an Observable that completed without a value. */
const NO_VALUE: unique symbol = Symbol('no value');

/**
 * Status values the transport reports on `server.status`.
 *
 * @publicApi
 */
export type StreamCoordinatorTransportStatus = 'connected' | 'disconnected';

/**
 * `@nestjs/microservices` transport over the same member runtime as the module: start it with
 * `NestFactory.createMicroservice(AppModule, { strategy: new StreamCoordinatorTransport(options) })`
 * or `app.connectMicroservice({ strategy })`, and declare handlers with `@EventPattern('orders')`
 * (the pattern is the stream; `@EventPattern('orders', { batchSize: 50 })` sets handler options;
 * `@Payload()` is the `StreamShardMessage`, `@Ctx()` the `StreamShardContext`). Handlers run
 * through Nest's microservice pipeline (guards, interceptors, pipes, filters); a handler that
 * throws or whose observable errors is retried, then dead-lettered, like a `@StreamShardHandler`.
 * Failures propagate to the transport (as with Kafka), which logs each once and dead-letters it
 * with the error it received: an `RpcException`'s error as an {@link EventHandlerFailedError};
 * any other error arrives as Nest's default RPC exception filter leaves it ("Internal server
 * error", after Nest logged the original) unless an exception filter hands it back as is
 * (`return throwError(() => exception)`) — then its message, stack and class (for
 * `nonRetryable`) are kept.
 * Request-response (`@MessagePattern`) is not supported: streams carry events.
 *
 * Shutdown: Nest closes a transport after every provider's `onModuleDestroy` on a signal (with
 * `enableShutdownHooks()`) and in a hybrid app's `close()`, so handlers would still run while the
 * application tears its own providers down. Import {@link drainModule} in the root module to drain
 * the handlers and leave the group in the application's first teardown hook instead:
 *
 * ```ts
 * export const transport = new StreamCoordinatorTransport(options);
 * @Module({ imports: [transport.drainModule()], controllers: [OrdersController] })
 * export class AppModule {}
 * ```
 *
 * @publicApi
 */
export class StreamCoordinatorTransport
  extends Server<Record<string, never>, StreamCoordinatorTransportStatus>
  implements CustomTransportStrategy
{
  /**
   * Failures reach the transport, which retries, dead-letters and logs them (as `ServerKafka`
   * hands them to kafkajs): Nest does not log an unmatched `RpcException` a second time.
   */
  override readonly propagatesEventHandlerErrors = true;
  private readonly options: ResolvedStreamCoordinatorOptions;
  private runtime: MemberRuntime | null = null;
  private connections: StreamCoordinatorConnections | null = null;
  /** {@link drainModule}'s drain, once the application created it (it did, if it imports it). */
  private drain: ShutdownDrain | null = null;

  /** @throws InvalidModuleOptionsError as `StreamCoordinatorModule.forRoot` would. */
  constructor(options: StreamCoordinatorModuleOptions) {
    super();
    this.options = resolveStreamCoordinatorOptions(options);
  }

  listen(callback: (...optionalParams: unknown[]) => unknown): void {
    if (!this.drain)
      this.options.logger.warn(
        "StreamCoordinatorTransport: transport.drainModule() is not imported, so in a hybrid app the member starts in startAllMicroservices() before the application's onApplicationBootstrap hooks ran, and on a signal (enableShutdownHooks) or a hybrid app close() handlers keep running while providers are torn down in onModuleDestroy; import transport.drainModule() in the root module",
      );
    const registry = new StreamHandlerRegistry(this.options);
    for (const [pattern, handler] of this.getHandlers()) this.register(registry, pattern, handler);
    this.connections = new StreamCoordinatorConnections(this.options);
    this.runtime = new MemberRuntime(
      this.options,
      registry,
      this.connections,
      new MemberRuntimeEvents(),
    );
    const runtime = this.runtime;
    // A hybrid app's startAllMicroservices() calls this before the application's hooks ran
    // (connectMicroservice marks them as run): the member starts in the drain's
    // onApplicationBootstrap, the application's last, once every module's completed. A pure
    // microservice ran them before this, so the drain starts it at once. Not waiting for the
    // start here: startAllMicroservices() awaits this callback, before app.listen() or init().
    if (this.drain) this.drain.registerStart(() => runtime.begin());
    else runtime.begin();
    this._status$.next('connected');
    callback();
  }

  private register(
    registry: StreamHandlerRegistry,
    pattern: string,
    handler: MessageHandler,
  ): void {
    if (!handler.isEventHandler) {
      throw new InvalidModuleOptionsError([
        {
          path: 'handlers',
          problem:
            'must be @EventPattern handlers: @MessagePattern (request-response) is not supported on streams',
          received: `@MessagePattern(${JSON.stringify(pattern)})`,
        },
      ]);
    }
    if (!isValidName(pattern)) {
      throw new InvalidModuleOptionsError([
        {
          path: 'handlers',
          problem:
            'must name streams: an @EventPattern pattern is a stream name of 1-128 characters of [A-Za-z0-9._-]',
          received: `@EventPattern(${JSON.stringify(pattern)})`,
        },
      ]);
    }
    const own = handler.extras as StreamShardHandlerOptions | undefined;
    const ownOptions = own && Object.keys(own).length > 0 ? own : undefined;
    const issues = collectHandlerOptionIssues(ownOptions);
    const merged = mergeHandlerOptions(this.options.handlerDefaults, ownOptions);
    if (issues.length > 0 || merged.issues.length > 0)
      throw new InvalidModuleOptionsError([...issues, ...merged.issues]);
    registry.register({
      stream: pattern,
      options: merged.options,
      className: 'EventPattern',
      methodName: pattern,
      invoke: withNonRetryable(async (message: StreamShardMessage, context: StreamShardContext) => {
        let emitted = true;
        try {
          // as `ServerKafka.handleEvent`: a plain result is handled; a stream must emit
          // (a plain copy, as for @StreamShardHandler's pipeline: pipes and interceptors that
          // copy the message by its own keys keep the payload)
          const result = await handler(plainShardMessage(message), context);
          if (isObservable(result)) {
            emitted = (await lastValueFrom(result, { defaultValue: NO_VALUE })) !== NO_VALUE;
          }
        } catch (error) {
          // Nest's default RPC exception filter emits `{ status: 'error', message }`
          throw error instanceof Error ? error : new EventHandlerFailedError(error);
        }
        // an exception filter that swallowed a failure with `EMPTY` did not handle it
        if (!emitted) throw new EmptyEventResultError(pattern, message.id);
      }, merged.options.nonRetryable),
    });
  }

  /**
   * A module whose only hook drains this transport's handlers and leaves the group, as the
   * application's first teardown hook (before any provider's `onModuleDestroy`; see the class
   * description). Import it once, in the application the transport is connected to.
   */
  drainModule(): DynamicModule {
    return {
      module: StreamCoordinatorDrainModule,
      providers: [
        {
          provide: TRANSPORT_DRAIN,
          inject: [ShutdownDrain],
          useFactory: (drain: ShutdownDrain) => {
            this.drain = drain;
            drain.register(async () => {
              await this.runtime?.shutdown();
            });
            return true;
          },
        },
      ],
    };
  }

  /** Drains in-flight handlers, leaves the group, closes the connections. */
  async close(): Promise<void> {
    await this.runtime?.beforeApplicationShutdown();
    await this.connections?.onApplicationShutdown();
    this._status$.next('disconnected');
  }

  on(): never {
    throw new TransportEventsUnsupportedError();
  }

  /** The member runtime underneath (its `status()` and readers). */
  unwrap<T>(): T {
    if (!this.runtime) throw new TransportNotListeningError();
    return this.runtime as T;
  }
}
