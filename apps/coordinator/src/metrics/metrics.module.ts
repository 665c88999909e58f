import { Module } from '@nestjs/common';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { CoordinatorMetrics } from './coordinator-metrics.js';
import { MetricsController } from './metrics.controller.js';
import { COORDINATOR_METRICS_OBSERVER, COORDINATOR_METRICS_REGISTRY } from './metrics.tokens.js';

/** The coordinator's Prometheus registry, metrics and `/metrics` route. */
@Module({
  controllers: [MetricsController],
  providers: [
    {
      provide: COORDINATOR_METRICS_REGISTRY,
      useFactory: () => {
        const registry = new Registry();
        collectDefaultMetrics({ register: registry, prefix: 'rsc_coordinator_' });
        return registry;
      },
    },
    {
      provide: CoordinatorMetrics,
      inject: [COORDINATOR_METRICS_REGISTRY],
      useFactory: (registry: Registry) => new CoordinatorMetrics(registry),
    },
    { provide: COORDINATOR_METRICS_OBSERVER, useExisting: CoordinatorMetrics },
  ],
  exports: [COORDINATOR_METRICS_REGISTRY, COORDINATOR_METRICS_OBSERVER, CoordinatorMetrics],
})
export class MetricsModule {}
