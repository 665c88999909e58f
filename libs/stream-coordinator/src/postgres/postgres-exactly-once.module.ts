import {
  type DynamicModule,
  Inject,
  Injectable,
  Logger,
  Module,
  type ModuleMetadata,
  type OnModuleInit,
  type Provider,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { EXACTLY_ONCE_APPLIED_CHECK } from '../constants/stream-coordinator.constants.js';
import { ExactlyOnceHostsCheck } from './exactly-once-hosts.check.js';
import { ExactlyOnceInterceptor } from './exactly-once.interceptor.js';
import { PostgresAppliedEntryCheck } from './postgres-applied-entry-check.js';
import { PostgresExactlyOnce } from './postgres-exactly-once.js';
import type {
  PostgresExactlyOnceAsyncOptions,
  PostgresExactlyOnceOptions,
} from './postgres-exactly-once-options.interface.js';
import { POSTGRES_EXACTLY_ONCE_OPTIONS } from './postgres-exactly-once.tokens.js';

/** Creates the table at bootstrap if asked; ends an owned pool after the members drained. */
@Injectable()
class PostgresExactlyOnceLifecycle implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('PostgresExactlyOnce');
  private readonly onPoolError = (error: Error): void => {
    this.logger.warn(`an idle PostgreSQL connection failed: ${error.message}`);
  };

  constructor(
    private readonly exactlyOnce: PostgresExactlyOnce,
    @Inject(POSTGRES_EXACTLY_ONCE_OPTIONS) private readonly options: PostgresExactlyOnceOptions,
  ) {
    // an idle client's error is emitted on the pool: unheard, it would crash the process
    exactlyOnce.pool.on('error', this.onPoolError);
  }

  async onModuleInit(): Promise<void> {
    if (this.options.createTable === true) await this.exactlyOnce.createTable();
  }

  /** After the stream coordinator's `beforeApplicationShutdown` drained the handlers. */
  async onApplicationShutdown(): Promise<void> {
    this.exactlyOnce.pool.off('error', this.onPoolError);
    await this.exactlyOnce.close();
  }
}

/**
 * Exactly-once effects into PostgreSQL for `@ExactlyOnce()` handlers (global once imported).
 * Provides {@link PostgresExactlyOnce} (to call `apply` by hand) and the interceptor
 * `@ExactlyOnce()` uses.
 *
 * ```ts
 * PostgresExactlyOnceModule.forRoot({ connectionString: process.env.DATABASE_URL })
 * PostgresExactlyOnceModule.forRootAsync({
 *   inject: [ConfigService],
 *   useFactory: (config: ConfigService) => ({ connectionString: config.get('DATABASE_URL') }),
 * })
 * ```
 *
 * @publicApi
 */
@Module({})
export class PostgresExactlyOnceModule {
  /** Validates the options at once (throws `InvalidExactlyOnceOptionsError`). */
  static forRoot(options: PostgresExactlyOnceOptions): DynamicModule {
    const exactlyOnce = new PostgresExactlyOnce(options);
    return PostgresExactlyOnceModule.create([
      { provide: POSTGRES_EXACTLY_ONCE_OPTIONS, useValue: options },
      { provide: PostgresExactlyOnce, useValue: exactlyOnce },
    ]);
  }

  /**
   * The options from a factory (`{ imports, inject, useFactory }`), validated when the module is
   * created at bootstrap (throws `InvalidExactlyOnceOptionsError`). Global, as `forRoot`: import
   * it once, in any module.
   */
  static forRootAsync(options: PostgresExactlyOnceAsyncOptions): DynamicModule {
    return PostgresExactlyOnceModule.create(
      [
        {
          provide: POSTGRES_EXACTLY_ONCE_OPTIONS,
          inject: options.inject ?? [],
          useFactory: options.useFactory as (
            ...args: unknown[]
          ) => PostgresExactlyOnceOptions | Promise<PostgresExactlyOnceOptions>,
        },
        {
          provide: PostgresExactlyOnce,
          inject: [POSTGRES_EXACTLY_ONCE_OPTIONS],
          useFactory: (resolved: PostgresExactlyOnceOptions) => new PostgresExactlyOnce(resolved),
        },
      ],
      options.imports ?? [],
    );
  }

  private static create(
    optionProviders: Provider[],
    imports: NonNullable<ModuleMetadata['imports']> = [],
  ): DynamicModule {
    return {
      module: PostgresExactlyOnceModule,
      global: true,
      imports: [DiscoveryModule, ...imports],
      providers: [
        ...optionProviders,
        ExactlyOnceInterceptor,
        PostgresExactlyOnceLifecycle,
        // refuses @ExactlyOnce() on anything but a @StreamShardHandler (an @EventPattern handler…)
        ExactlyOnceHostsCheck,
        // asked before an exactly-once handler's entry is dead-lettered (see the explorer)
        {
          provide: EXACTLY_ONCE_APPLIED_CHECK,
          inject: [PostgresExactlyOnce],
          useFactory: (exactlyOnce: PostgresExactlyOnce) =>
            new PostgresAppliedEntryCheck(exactlyOnce.pool, exactlyOnce.table),
        },
      ],
      exports: [PostgresExactlyOnce, ExactlyOnceInterceptor, EXACTLY_ONCE_APPLIED_CHECK],
    };
  }
}
