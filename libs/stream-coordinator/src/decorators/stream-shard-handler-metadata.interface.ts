import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';

/**
 * What `@StreamShardHandler` records on a method.
 *
 * @internal
 */
export interface StreamShardHandlerMetadata {
  /** The stream the method handles. */
  readonly stream: string;
  /** The method's own options, validated (not yet merged with `handlerDefaults`). */
  readonly options: StreamShardHandlerOptions | undefined;
}

/**
 * One entry of Nest's route-args metadata (`ROUTE_ARGS_METADATA`), keyed `"<type>:<index>"`.
 * Custom decorators made with `createParamDecorator()` carry a `factory` too.
 *
 * @internal
 */
export interface RouteArgsEntry {
  readonly index: number;
  readonly data?: unknown;
  readonly pipes?: readonly unknown[];
  readonly factory?: unknown;
}

/** Nest's route-args metadata of one method. @internal */
export type RouteArgsMetadata = Readonly<Record<string, RouteArgsEntry>>;
