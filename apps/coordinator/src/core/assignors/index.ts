/**
 * Server-side assignors of the coordinator: the `ShardAssignor` contract, the built-in `uniform`
 * (default) and `range` assignors, and the registry helpers. Pure TypeScript, no Nest, no I/O.
 *
 * @packageDocumentation
 */
export * from './builtin-assignors.js';
export * from './duplicate-assignor-name.error.js';
export * from './invalid-assignor-input.error.js';
export * from './invalid-assignor-name.error.js';
export * from './range.assignor.js';
export type * from './shard-assignor.interface.js';
export * from './uniform.assignor.js';
