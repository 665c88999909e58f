/** Injection token of the worker's {@link WorkerConfig}. */
export const WORKER_CONFIG = 'EXAMPLE_WORKER:CONFIG';
