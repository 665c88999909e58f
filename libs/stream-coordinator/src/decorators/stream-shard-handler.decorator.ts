import { SetMetadata } from '@nestjs/common';
import {
  CUSTOM_ROUTE_ARGS_METADATA,
  ENTRY_PROVIDER_WATERMARK,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants.js';
import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import { UnsupportedBatchHandlerError } from '../errors/batch/unsupported-batch-handler.error.js';
import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import {
  SHARD_CONTEXT_PARAMS_METADATA,
  SHARD_MESSAGE_PARAMTYPE,
  STREAM_SHARD_HANDLER_METADATA,
} from '../constants/stream-coordinator.constants.js';
import {
  CONFLICTING_PARAMETER,
  DOUBLE_DECORATION,
  INVALID_HANDLER_OPTIONS,
  INVALID_STREAM_NAME,
  NOT_A_METHOD,
  UNSUPPORTED_PARAMETER,
} from '../constants/stream-coordinator.messages.js';
import {
  collectHandlerOptionIssues,
  renderReceived,
} from '../options/stream-coordinator-options.validation.js';
import { isValidName } from '../protocol/limits.js';
import type {
  RouteArgsMetadata,
  StreamShardHandlerMetadata,
} from './stream-shard-handler-metadata.interface.js';

/**
 * Marks a method as the handler of one stream. The member runtime calls it for every message of
 * the shards of that stream the coordinator grants to this member: messages of one shard one after
 * another, different shards concurrently (up to `concurrency`) — or, with `ordering: 'key'`,
 * messages of one key one after another, different keys of a shard concurrently (up to
 * `maxConcurrency` per shard). Resolving acknowledges the
 * message; throwing makes it redelivered per the retry policy, then dead-lettered after
 * `maxDeliveries`.
 *
 * The method is a real Nest handler: guards, interceptors, pipes and exception filters apply. It
 * is called as `(message, context)` unless it uses `@ShardMessage()`/`@ShardContext()`.
 *
 * Throws {@link InvalidStreamHandlerError} at class definition time for an invalid stream name or
 * options, or when applied to something other than an instance method; the message names
 * `ClassName.member`.
 *
 * @param stream the logical stream (`[A-Za-z0-9._-]{1,128}`).
 * @param options this handler's options, over the module's `handlerDefaults`.
 * @publicApi
 */
export function StreamShardHandler(
  stream: string,
  options?: StreamShardHandlerOptions,
): MethodDecorator {
  const decorator = (
    target: object,
    key?: string | symbol,
    descriptor?: PropertyDescriptor,
  ): void => {
    const { className, memberName } = describeTarget(target, key);
    const fail = (reason: string): never => {
      throw new InvalidStreamHandlerError(className, memberName, reason);
    };
    if (key === undefined) fail(NOT_A_METHOD('class'));
    if (typeof target === 'function') fail(NOT_A_METHOD('static method'));
    if (descriptor === undefined) fail(NOT_A_METHOD('property'));
    if (typeof descriptor?.value !== 'function') fail(NOT_A_METHOD('accessor'));
    const method = descriptor!.value as (...args: unknown[]) => unknown;
    const methodKey = key!;

    if (typeof stream !== 'string' || !isValidName(stream))
      fail(INVALID_STREAM_NAME(renderReceived(stream)));
    const issues = collectHandlerOptionIssues(options);
    if (issues.length > 0) fail(INVALID_HANDLER_OPTIONS(issues));
    const previous = Reflect.getMetadata(STREAM_SHARD_HANDLER_METADATA, method) as
      StreamShardHandlerMetadata | undefined;
    if (previous !== undefined) fail(DOUBLE_DECORATION(previous.stream, stream));

    // Parameter decorators of a method run before its method decorators, so the parameters are
    // all known here.
    const reason = checkParameters(target.constructor, methodKey);
    if (reason !== undefined) fail(reason);
    if (options?.batch !== undefined) checkBatchParameters(target.constructor, methodKey);

    const metadata: StreamShardHandlerMetadata = {
      stream,
      options: options === undefined ? undefined : copyOptions(options),
    };
    SetMetadata(STREAM_SHARD_HANDLER_METADATA, metadata)(target, methodKey, descriptor!);
    // The host handles messages of its own, like a controller: as an entry provider, Nest attaches
    // the application's request-scoped and transient global enhancers to it, and builds them
    // with it for each message's context.
    Reflect.defineMetadata(ENTRY_PROVIDER_WATERMARK, true, target.constructor);
  };
  return decorator as MethodDecorator;
}

/**
 * Refuses what a batch handler cannot support: a `@ShardMessage('field')` parameter picks a field
 * of one message, while a batch handler receives an array.
 */
function checkBatchParameters(host: Function, key: string | symbol): void {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, host, key) ?? {}) as RouteArgsMetadata;
  for (const [entryKey, entry] of Object.entries(args)) {
    if (entryKey.includes(CUSTOM_ROUTE_ARGS_METADATA) || entry.data === undefined) continue;
    throw new UnsupportedBatchHandlerError(
      `${host.name}.${String(key)}`,
      `parameter ${entry.index} is @ShardMessage(${JSON.stringify(entry.data)}), which picks a field of one message while a batch handler receives an array; use @ShardMessage() and read the field of each message`,
    );
  }
}

/** A copy the caller cannot change afterwards (the exception classes themselves are shared). */
function copyOptions(options: StreamShardHandlerOptions): StreamShardHandlerOptions {
  const { nonRetryable, ...rest } = options;
  const copy: StreamShardHandlerOptions = structuredClone(rest);
  if (nonRetryable !== undefined) copy.nonRetryable = [...nonRetryable];
  return copy;
}

function describeTarget(target: object, key: string | symbol | undefined) {
  const className =
    typeof target === 'function'
      ? target.name || '(anonymous class)'
      : target.constructor.name || '(anonymous class)';
  return { className, memberName: key === undefined ? '' : String(key) };
}

/**
 * Checks the parameter decorators of a handler and, when it has none, records the implicit layout
 * `(message, context)`: the message as a route-args parameter (so pipes run on it) and the context
 * at index 1 (so they do not).
 */
function checkParameters(host: Function, key: string | symbol): string | undefined {
  const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, host, key) ?? {}) as RouteArgsMetadata;
  const contextIndexes = (Reflect.getMetadata(SHARD_CONTEXT_PARAMS_METADATA, host, key) ??
    []) as number[];
  const messageIndexes = new Set<number>();
  for (const [entryKey, entry] of Object.entries(args)) {
    if (entryKey.includes(CUSTOM_ROUTE_ARGS_METADATA)) continue;
    if (Number(entryKey.split(':')[0]) !== SHARD_MESSAGE_PARAMTYPE)
      return UNSUPPORTED_PARAMETER(entry.index);
    messageIndexes.add(entry.index);
  }
  const conflict = contextIndexes.find((index) => messageIndexes.has(index));
  if (conflict !== undefined) return CONFLICTING_PARAMETER(conflict);
  if (Object.keys(args).length === 0 && contextIndexes.length === 0) {
    Reflect.defineMetadata(
      ROUTE_ARGS_METADATA,
      { [`${SHARD_MESSAGE_PARAMTYPE}:0`]: { index: 0, data: undefined, pipes: [] } },
      host,
      key,
    );
    Reflect.defineMetadata(SHARD_CONTEXT_PARAMS_METADATA, [1], host, key);
  }
  return undefined;
}
