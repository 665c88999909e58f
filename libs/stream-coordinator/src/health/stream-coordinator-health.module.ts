import { type DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import {
  type MemberHealthOptions,
  STREAM_COORDINATOR_HEALTH_OPTIONS,
} from './member-health-options.interface.js';
import { StreamCoordinatorHealthIndicator } from './stream-coordinator.health.js';

/**
 * Provides {@link StreamCoordinatorHealthIndicator} to the application's own health controller
 * (needs `@nestjs/terminus`; import it next to `StreamCoordinatorModule`, which is global by
 * default). `forRoot(options)` sets the thresholds.
 *
 * @publicApi
 */
@Module({
  imports: [TerminusModule],
  providers: [StreamCoordinatorHealthIndicator],
  exports: [StreamCoordinatorHealthIndicator, TerminusModule],
})
export class StreamCoordinatorHealthModule {
  /** The module with the given thresholds. */
  static forRoot(options: MemberHealthOptions = {}): DynamicModule {
    return {
      module: StreamCoordinatorHealthModule,
      providers: [{ provide: STREAM_COORDINATOR_HEALTH_OPTIONS, useValue: options }],
    };
  }
}
