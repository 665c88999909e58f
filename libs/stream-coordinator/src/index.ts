/**
 * `@redis-stream-coordinator/nestjs`: Redis Streams with coordinator-managed shard ownership for
 * NestJS applications.
 *
 * @packageDocumentation
 */
export * from './interfaces/index.js';
export * from './protocol/index.js';
