/** Injection token of the `StreamCoordinatorClientProxy` that publishes orders. */
export const ORDERS_CLIENT = Symbol('ORDERS_CLIENT');
