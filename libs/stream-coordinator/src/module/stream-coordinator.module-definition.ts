import { ConfigurableModuleBuilder } from '@nestjs/common';
import {
  STREAM_COORDINATOR_DEFAULTS,
  STREAM_COORDINATOR_RAW_OPTIONS,
} from '../constants/stream-coordinator.constants.js';
import type {
  StreamCoordinatorModuleExtras,
  StreamCoordinatorModuleOptions,
} from '../interfaces/stream-coordinator-options.interface.js';

/**
 * The generated `forRoot`/`forRootAsync` of `StreamCoordinatorModule`. Both provide the raw
 * options under {@link STREAM_COORDINATOR_RAW_OPTIONS}; the module validates them in one
 * provider, so both paths fail alike on bad options.
 *
 * `isGlobal` defaults to `true`: an application is one member of one group, and the producer and
 * registry are needed wherever handlers and publishers live. (nestjs/nest#13372 — extras not
 * reaching the async variant on some versions — is covered by a test of `forRootAsync`.)
 *
 * @internal
 */
export const {
  ConfigurableModuleClass: StreamCoordinatorConfigurableModule,
  MODULE_OPTIONS_TOKEN,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<StreamCoordinatorModuleOptions>({
  optionsInjectionToken: STREAM_COORDINATOR_RAW_OPTIONS,
})
  .setClassMethodName('forRoot')
  .setExtras<StreamCoordinatorModuleExtras>(
    { isGlobal: STREAM_COORDINATOR_DEFAULTS.isGlobal },
    (definition, extras) => ({
      ...definition,
      global: extras.isGlobal ?? STREAM_COORDINATOR_DEFAULTS.isGlobal,
    }),
  )
  .build();

/**
 * Argument of `StreamCoordinatorModule.forRoot()`.
 */
export type StreamCoordinatorModuleForRootOptions = typeof OPTIONS_TYPE;

/**
 * Argument of `StreamCoordinatorModule.forRootAsync()` (`imports`, `inject`, `useFactory`,
 * `useClass` or `useExisting`, plus `isGlobal`).
 *
 * @publicApi
 */
export type StreamCoordinatorModuleAsyncOptions = typeof ASYNC_OPTIONS_TYPE;
