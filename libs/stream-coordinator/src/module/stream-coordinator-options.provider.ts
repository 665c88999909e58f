import type { FactoryProvider } from '@nestjs/common';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import {
  STREAM_COORDINATOR_OPTIONS,
  STREAM_COORDINATOR_RAW_OPTIONS,
} from '../constants/stream-coordinator.constants.js';
import { resolveStreamCoordinatorOptions } from '../options/stream-coordinator-options.validation.js';

/**
 * Validates the raw options (from `forRoot` or the `forRootAsync` factory alike) and provides the
 * resolved ones under `STREAM_COORDINATOR_OPTIONS`. Throws `InvalidModuleOptionsError`, which
 * fails the bootstrap.
 *
 * @internal
 */
export const streamCoordinatorOptionsProvider: FactoryProvider<ResolvedStreamCoordinatorOptions> = {
  provide: STREAM_COORDINATOR_OPTIONS,
  useFactory: (raw: unknown) => resolveStreamCoordinatorOptions(raw),
  inject: [STREAM_COORDINATOR_RAW_OPTIONS],
};
