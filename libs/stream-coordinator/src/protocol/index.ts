/**
 * The wire protocol shared by the coordinator, the member runtime and producers in any language:
 * request and response shapes, error codes, identifier rules, key names and the routing function.
 * Free of Nest and I/O.
 *
 * @packageDocumentation
 */
export * from './error-codes.js';
export * from './key-space.js';
export * from './limits.js';
export * from './murmur3.js';
export * from './routing.js';
export * from './target-moves.js';
export type * from './wire.types.js';
export * from './dead-letter.types.js';
