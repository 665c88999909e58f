/** Injection token of the worker's {@link WorkerConfig}. */
export const WORKER_CONFIG = 'EXAMPLE_WORKER:CONFIG';

/** Injection token of the worker's prom-client `Registry` (also given to the library). */
export const WORKER_METRICS_REGISTRY = 'EXAMPLE_WORKER:METRICS_REGISTRY';

/**
 * Injection token of the `orders` handler in use (`{ handled }` for `/status`): the plain
 * `OrdersHandler`, or the exactly-once one.
 */
export const ORDERS_HANDLER = 'EXAMPLE_WORKER:ORDERS_HANDLER';

/** What `/status` reads from the handler in use. */
export interface HandledCounter {
  readonly handled: number;
}
