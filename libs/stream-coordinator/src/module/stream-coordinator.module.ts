import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { HandlerInvokerFactory } from '../discovery/handler-invoker.factory.js';
import { StreamHandlerMetadataAccessor } from '../discovery/stream-handler-metadata.accessor.js';
import { StreamHandlerExplorer } from '../discovery/stream-handler.explorer.js';
import { StreamHandlerRegistry } from '../discovery/stream-handler.registry.js';
import { STREAM_COORDINATOR_OPTIONS } from '../constants/stream-coordinator.constants.js';
import { StreamCoordinatorConfigurableModule } from './stream-coordinator.module-definition.js';
import { StreamCoordinatorDrainModule } from '../runtime/shutdown-drain.module.js';
import { streamCoordinatorOptionsProvider } from './stream-coordinator-options.provider.js';
import { STREAM_COORDINATOR_RUNTIME_PROVIDERS } from './stream-coordinator-runtime.providers.js';

/**
 * Redis Streams with coordinator-managed shard ownership.
 *
 * ```ts
 * StreamCoordinatorModule.forRoot({ coordinatorUrl, token: process.env.COORDINATOR_TOKEN, redis, group })
 * StreamCoordinatorModule.forRootAsync({ imports, inject, useFactory })
 * ```
 *
 * Global by default (`isGlobal: false` to opt out). Options are validated at bootstrap, on both
 * paths, by one provider; `@StreamShardHandler` methods of every provider and controller of the
 * application are discovered in `onModuleInit`.
 *
 * Shutdown (`app.close()`, or a signal with `app.enableShutdownHooks()`): the member drains its
 * handlers and leaves the group in the application's first teardown hook, before any other
 * provider's `onModuleDestroy` runs, so handlers never see the application's own resources (a
 * database pool closed in `onModuleDestroy`) go away; its Redis connections close last.
 *
 * @publicApi
 */
@Module({
  imports: [DiscoveryModule, StreamCoordinatorDrainModule],
  providers: [
    streamCoordinatorOptionsProvider,
    StreamHandlerMetadataAccessor,
    HandlerInvokerFactory,
    StreamHandlerRegistry,
    StreamHandlerExplorer,
    ...STREAM_COORDINATOR_RUNTIME_PROVIDERS,
  ],
  exports: [
    STREAM_COORDINATOR_OPTIONS,
    StreamHandlerRegistry,
    ...STREAM_COORDINATOR_RUNTIME_PROVIDERS,
  ],
})
export class StreamCoordinatorModule extends StreamCoordinatorConfigurableModule {}
