import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { StreamCoordinatorModule } from '@redis-stream-coordinator/nestjs';
import { StreamCoordinatorHealthModule } from '@redis-stream-coordinator/nestjs/health';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { AckRecorder } from './ack-recorder.js';
import { HandledRecorder } from './handled-recorder.js';
import { HealthController } from './health.controller.js';
import { MetricsController } from './metrics.controller.js';
import { OrdersHandler } from './orders.handler.js';
import { StatusController } from './status.controller.js';
import { ORDERS_HANDLER, WORKER_CONFIG, WORKER_METRICS_REGISTRY } from './worker.tokens.js';
import type { WorkerConfig } from './worker-config.js';

/**
 * The example worker: the stream coordinator module, one handler, and the routes an operator
 * needs: `/status`, `/health/live`, `/health/ready` (the library's member checks) and `/metrics`
 * (the app's own registry, which the library's member metrics join).
 */
@Module({})
export class WorkerModule {
  /**
   * `handlers`: replaces the plain `OrdersHandler` (the exactly-once mode passes its own, with
   * the modules they need); one of them provides `ORDERS_HANDLER`.
   */
  static forConfig(
    config: WorkerConfig,
    handlers?: { imports: DynamicModule[]; providers: Provider[] },
  ): DynamicModule {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    return {
      module: WorkerModule,
      imports: [
        StreamCoordinatorModule.forRootAsync({
          useFactory: () => ({
            coordinatorUrl: config.coordinatorUrl,
            token: config.token,
            redis: config.redisUrl,
            group: config.group,
            ...(config.memberId ? { memberId: config.memberId } : {}),
            ...(config.instanceId ? { instanceId: config.instanceId } : {}),
            ...(config.shutdownTimeoutMs ? { shutdownTimeoutMs: config.shutdownTimeoutMs } : {}),
            handlerDefaults: {
              batchSize: config.batchSize,
              maxDeliveries: config.maxDeliveries,
              ordering: config.ordering,
              ...(config.maxConcurrency > 0 ? { maxConcurrency: config.maxConcurrency } : {}),
            },
            metrics: {
              registry,
              ...(config.metricsSampleIntervalMs
                ? { sampleIntervalMs: config.metricsSampleIntervalMs }
                : {}),
            },
          }),
        }),
        StreamCoordinatorHealthModule,
        ...(handlers?.imports ?? []),
      ],
      controllers: [StatusController, HealthController, MetricsController],
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        { provide: WORKER_METRICS_REGISTRY, useValue: registry },
        {
          provide: HandledRecorder,
          useValue: new HandledRecorder(config.recordFile, config.teardownDelayMs),
        },
        ...(handlers?.providers ?? [
          OrdersHandler,
          { provide: ORDERS_HANDLER, useExisting: OrdersHandler },
        ]),
        AckRecorder,
      ],
    };
  }
}
