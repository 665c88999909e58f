import { type DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { CoordinatorConfigModule } from './config/coordinator-config.module.js';
import { CoordinatorStartup } from './coordinator-startup.js';
import type { CoordinatorConfig } from './config/coordinator-config.js';
import { DocsController } from './docs/docs.controller.js';
import { GroupsModule } from './groups/groups.module.js';
import { HealthModule } from './health/health.module.js';
import { ProtocolErrorFilter } from './http/protocol-error.filter.js';
import { CoordinatorRedisModule } from './redis/coordinator-redis.module.js';
import { UiModule } from './ui/ui.module.js';
import { StreamsModule } from './streams/streams.module.js';

/**
 * The coordinator application. `extra` lets an embedding app (or a test) add modules, for
 * example one that provides a custom `@ShardAssignorProvider()` assignor.
 */
@Module({})
export class CoordinatorAppModule {
  static forRoot(
    config: CoordinatorConfig,
    extra: Pick<ModuleMetadata, 'imports' | 'providers'> = {},
  ): DynamicModule {
    return {
      module: CoordinatorAppModule,
      imports: [
        CoordinatorConfigModule.forRoot(config),
        CoordinatorRedisModule,
        GroupsModule,
        StreamsModule,
        HealthModule,
        UiModule,
        ...(extra.imports ?? []),
      ],
      controllers: [DocsController],
      providers: [
        { provide: APP_FILTER, useClass: ProtocolErrorFilter },
        CoordinatorStartup,
        ...(extra.providers ?? []),
      ],
    };
  }
}
