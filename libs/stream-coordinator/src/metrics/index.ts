/**
 * `@redis-stream-coordinator/nestjs/metrics`: the member-side Prometheus metrics (needs
 * `prom-client`). The module registers them by itself (option `metrics`); this entry point is
 * for reading the definitions and for building them by hand.
 *
 * @packageDocumentation
 */
export * from './member-metric-definitions.js';
export { StreamCoordinatorMetrics } from './stream-coordinator-metrics.js';
export { MetricsRegistrationError } from '../errors/metrics/metrics-registration.error.js';
export type { StreamCoordinatorMetricsOptions } from './stream-coordinator-metrics.js';
export { groupFigures, type ShardLagSample } from './shard-lag-sampler.js';
