/**
 * `@redis-stream-coordinator/nestjs/internal`: what the coordinator app, the `rsc` CLI, the
 * example apps, the tests and the benchmarks share with the library beyond its public API — Redis
 * connections and Lua scripts, the data plane (shard readers, fenced commands, dead-letter
 * records), the producer's routing core, the member runtime and its events, the handler registry
 * and every error class.
 *
 * NOT part of the public API: no compatibility promise between versions, no API report, no
 * public-API tags. Applications import from the root entry point, `/protocol`,
 * `/microservices`, `/health` or `/metrics` instead.
 *
 * @packageDocumentation
 */

// Redis connections, probes and Lua scripts
export * from '../redis/index.js';
export { closeConnection } from '../redis/close-connection.js';
export { pingRedis, unreachableReason, withTimeout } from '../redis/bounded-call.js';
export { isRedisUrl } from '../redis/redis-url.js';
export { type ReplyShape, RespReplyParser } from '../redis/direct/resp-reply-parser.js';
export { parseXinfoGroups, type XinfoGroup } from '../redis/xinfo-groups.js';

// Every error class (the root exports the ones applications catch or throw)
export * from '../errors/index.js';

// The data plane, dead-letter records and the producer's routing core
export * from '../data-plane/index.js';
export * from '../dead-letters/index.js';
export * from '../producer/index.js';

// Module internals: resolved options, their injection token, the handler registry
export type * from '../interfaces/resolved-stream-coordinator-options.interface.js';
export type { StreamCoordinatorModuleExtras } from '../interfaces/stream-coordinator-options.interface.js';
export { STREAM_COORDINATOR_OPTIONS } from '../constants/stream-coordinator.constants.js';
export { InjectStreamCoordinatorOptions } from '../decorators/inject-stream-coordinator-options.decorator.js';
export { StreamHandlerRegistry } from '../discovery/stream-handler.registry.js';
export type { StreamHandlerDefinition } from '../discovery/stream-handler-definition.interface.js';
export type { HandlerInvoke, HandlerInvocationPath } from '../discovery/handler-invoker.factory.js';

// Member identity and the member runtime
export {
  defaultMemberId,
  deriveMemberId,
  sanitizeIdPart,
  type MemberIdStrategy,
  type MemberIdEnvironment,
} from '../identity/member-id.js';
export { MemberRuntime } from '../runtime/member-runtime.js';
export type { MemberPhase, MemberRuntimeStatus } from '../runtime/member-runtime.js';
export { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
export type { MemberLifecycleEvents, ShardActivity } from '../runtime/member-runtime-events.js';
export { CoordinatorClient } from '../runtime/coordinator-client.js';
export type { GrantedShard } from '../runtime/membership.js';
