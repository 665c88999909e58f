/**
 * `@redis-stream-coordinator/nestjs`: Redis Streams with coordinator-managed shard ownership for
 * NestJS applications — ordered per-key handling, incremental rebalancing, retries, dead-letter,
 * data-plane fencing, health and metrics.
 *
 * This root entry point is the application author's API: the module and its options, the handler
 * decorators and their options, the message and context types, the producer and the errors an
 * application catches or throws. Other public entry points: `/protocol` (the wire protocol),
 * `/microservices` (a Nest microservice transport), `/health` (terminus indicators) and
 * `/metrics` (Prometheus definitions). `/internal` is shared with the coordinator and the CLI and
 * is not public. The reviewed surface of each public entry point is in `api/*.api.md`.
 *
 * @packageDocumentation
 */

// The module and its options
export { StreamCoordinatorModule } from './module/stream-coordinator.module.js';
export type { StreamCoordinatorModuleAsyncOptions } from './module/stream-coordinator.module-definition.js';
export type {
  MemberIdOption,
  MetricsRegistryLike,
  ReaderClient,
  StreamCoordinatorMetricsOptions,
  StreamCoordinatorModuleOptions,
} from './interfaces/stream-coordinator-options.interface.js';
export type {
  RedisClusterNode,
  RedisConnectionOptions,
} from './interfaces/redis-connection-options.interface.js';
export type { PayloadSerializer } from './interfaces/payload-serializer.interface.js';
export { JsonPayloadSerializer } from './data-plane/json-payload.serializer.js';

// Handlers: decorators, their options, what they receive
export { StreamShardHandler } from './decorators/stream-shard-handler.decorator.js';
export { ShardMessage, type ShardMessagePipe } from './decorators/shard-message.decorator.js';
export { ShardContext } from './decorators/shard-context.decorator.js';
export type {
  ExceptionClass,
  RetryBackoffOptions,
  StartFrom,
  StreamShardHandlerOptions,
} from './interfaces/stream-shard-handler-options.interface.js';
export type {
  StreamShardBatchItemFailure,
  StreamShardBatchOptions,
  StreamShardBatchResult,
} from './interfaces/stream-shard-batch.interface.js';
export type { StreamShardMessage } from './interfaces/stream-shard-message.interface.js';
export {
  StreamShardContext,
  STREAM_SHARD_CONTEXT_TYPE,
  type StreamShardContextType,
} from './context/stream-shard.context.js';

// The producer
export { StreamProducer } from './producer/stream-producer.js';
export type {
  PublishBatchOptions,
  PublishMessage,
  PublishOptions,
  TrimPolicy,
} from './producer/publish-options.interface.js';

// Errors an application catches or throws
export { StreamCoordinatorError } from './errors/stream-coordinator.error.js';
export { NonRetryableError } from './errors/non-retryable.error.js';
export { ShardReleasedError, type ShardReleaseCause } from './errors/shard-released.error.js';
export {
  InvalidModuleOptionsError,
  type OptionIssue,
} from './errors/invalid-module-options.error.js';
export { PublishError } from './errors/producer/publish.error.js';
export { StaleRoutingError } from './errors/producer/stale-routing.error.js';
export { RoutingFetchError } from './errors/producer/routing-fetch.error.js';
export { InvalidRoutingError } from './errors/producer/invalid-routing.error.js';
