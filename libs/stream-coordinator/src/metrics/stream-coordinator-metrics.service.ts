import type { Registry } from 'prom-client';
import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
import { MetricsRegistrationError } from '../errors/metrics/metrics-registration.error.js';
import type { ResolvedStreamCoordinatorOptions } from '../interfaces/resolved-stream-coordinator-options.interface.js';
import { MemberRuntime } from '../runtime/member-runtime.js';
import { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import { StreamCoordinatorConnections } from '../runtime/stream-coordinator-connections.js';
import { ShardLagSampler } from './shard-lag-sampler.js';

/** The part of the prom-client-based metrics the service drives. */
interface LoadedMetrics {
  close(): void;
}

/** True for the error of an `import()` of a package that is not installed. */
function isMissingPackage(error: unknown, name: string): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    (e?.code === 'ERR_MODULE_NOT_FOUND' || e?.code === 'MODULE_NOT_FOUND') &&
    typeof e.message === 'string' &&
    e.message.includes(name)
  );
}

/**
 * Wires the member-side metrics (option `metrics`, default on) without making prom-client a
 * hard dependency: the prom-client-based implementation (`./stream-coordinator-metrics.js`) is
 * imported lazily when the module initialises, and skipped with one log line when prom-client
 * is not installed. Also runs the periodic lag/pending sampler while the application is a
 * member, and unregisters the metrics on shutdown.
 *
 * @internal
 */
@Injectable()
export class StreamCoordinatorMetricsService
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private metrics: LoadedMetrics | null = null;
  private sampler: ShardLagSampler | null = null;

  constructor(
    @InjectStreamCoordinatorOptions() private readonly options: ResolvedStreamCoordinatorOptions,
    private readonly runtime: MemberRuntime,
    private readonly events: MemberRuntimeEvents,
    private readonly connections: StreamCoordinatorConnections,
  ) {}

  /** Whether metrics are registered. */
  get enabled(): boolean {
    return this.metrics !== null;
  }

  async onModuleInit(): Promise<void> {
    const settings = this.options.metrics;
    if (settings === false) return;
    let implementation: typeof import('./stream-coordinator-metrics.js');
    try {
      implementation = await import('./stream-coordinator-metrics.js');
    } catch (error) {
      if (settings.registry === undefined && isMissingPackage(error, 'prom-client')) {
        this.options.logger.log(
          'prom-client is not installed: member metrics are off (install prom-client, or set metrics: false to silence this)',
        );
        return;
      }
      throw error;
    }
    this.sampler = new ShardLagSampler({
      group: this.options.group,
      shards: () => this.runtime.status().held,
      connection: () => this.connections.commands(),
      intervalMs: settings.sampleIntervalMs,
      logger: this.options.logger,
    });
    const sampler = this.sampler;
    try {
      this.metrics = new implementation.StreamCoordinatorMetrics({
        ...(settings.registry !== undefined
          ? { registry: settings.registry as unknown as Registry }
          : {}),
        prefix: settings.prefix,
        group: this.options.group,
        runtime: this.runtime,
        events: this.events,
        lag: () => sampler.values(),
      });
    } catch (error) {
      // Two applications in one process on one registry: the second one runs without metrics
      // rather than failing to start.
      if (!(error instanceof MetricsRegistrationError)) throw error;
      this.options.logger.warn(`member metrics are off: ${error.message}`);
      this.sampler = null;
    }
  }

  onApplicationBootstrap(): void {
    if (this.runtime.isMember) this.sampler?.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.sampler?.stop();
    this.metrics?.close();
    this.metrics = null;
  }
}
