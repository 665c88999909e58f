/**
 * `@redis-stream-coordinator/nestjs`: Redis Streams with coordinator-managed shard ownership for
 * NestJS applications — ordered per-key handling, incremental rebalancing, retries, dead-letter,
 * data-plane fencing, health and metrics.
 *
 * @packageDocumentation
 */
export * from './interfaces/index.js';
export * from './protocol/index.js';
export * from './redis/index.js';
export * from './module/stream-coordinator.module.js';
export type {
  StreamCoordinatorModuleForRootOptions,
  StreamCoordinatorModuleAsyncOptions,
} from './module/stream-coordinator.module-definition.js';
export type * from './interfaces/stream-coordinator-options.interface.js';
export type * from './interfaces/resolved-stream-coordinator-options.interface.js';
export { STREAM_COORDINATOR_OPTIONS } from './constants/stream-coordinator.constants.js';
export { JsonPayloadSerializer } from './data-plane/json-payload.serializer.js';
export { StreamShardHandler } from './decorators/stream-shard-handler.decorator.js';
export { ShardMessage, type ShardMessagePipe } from './decorators/shard-message.decorator.js';
export { ShardContext } from './decorators/shard-context.decorator.js';
export { InjectStreamCoordinatorOptions } from './decorators/inject-stream-coordinator-options.decorator.js';
export {
  StreamShardContext,
  STREAM_SHARD_CONTEXT_TYPE,
  type StreamShardContextType,
} from './context/stream-shard.context.js';
export { StreamHandlerRegistry } from './discovery/stream-handler.registry.js';
export type { StreamHandlerDefinition } from './discovery/stream-handler-definition.interface.js';
export type { HandlerInvoke, HandlerInvocationPath } from './discovery/handler-invoker.factory.js';
export {
  defaultMemberId,
  deriveMemberId,
  sanitizeIdPart,
  type MemberIdStrategy,
  type MemberIdEnvironment,
} from './identity/member-id.js';
export * from './errors/index.js';
export { StreamProducer } from './producer/stream-producer.js';
export * from './producer/index.js';
export { MemberRuntime } from './runtime/member-runtime.js';
export type { MemberPhase, MemberRuntimeStatus } from './runtime/member-runtime.js';
export { MemberRuntimeEvents } from './runtime/member-runtime-events.js';
export type { MemberLifecycleEvents, ShardActivity } from './runtime/member-runtime-events.js';
export { CoordinatorClient } from './runtime/coordinator-client.js';
export type { GrantedShard } from './runtime/membership.js';
export * from './data-plane/index.js';
export * from './dead-letters/index.js';
