/** Injection token of the worker's {@link WorkerConfig}. */
export const WORKER_CONFIG = 'EXAMPLE_WORKER:CONFIG';

/** Injection token of the worker's prom-client `Registry` (also given to the library). */
export const WORKER_METRICS_REGISTRY = 'EXAMPLE_WORKER:METRICS_REGISTRY';
