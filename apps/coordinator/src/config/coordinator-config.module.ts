import { type DynamicModule, Global, Module } from '@nestjs/common';
import { COORDINATOR_CONFIG } from './config.tokens.js';
import type { CoordinatorConfig } from './coordinator-config.js';

/** Provides the validated configuration to the whole coordinator app. */
@Global()
@Module({})
export class CoordinatorConfigModule {
  /** Registers an already validated configuration. */
  static forRoot(config: CoordinatorConfig): DynamicModule {
    return {
      module: CoordinatorConfigModule,
      providers: [{ provide: COORDINATOR_CONFIG, useValue: config }],
      exports: [COORDINATOR_CONFIG],
    };
  }
}
