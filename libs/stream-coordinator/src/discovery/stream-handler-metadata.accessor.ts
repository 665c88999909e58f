import { Injectable } from '@nestjs/common';
import {
  CUSTOM_ROUTE_ARGS_METADATA,
  EXCEPTION_FILTERS_METADATA,
  GUARDS_METADATA,
  INTERCEPTORS_METADATA,
  PIPES_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';
import type {
  RouteArgsMetadata,
  StreamShardHandlerMetadata,
} from '../decorators/stream-shard-handler-metadata.interface.js';
import {
  SHARD_CONTEXT_PARAMS_METADATA,
  STREAM_SHARD_HANDLER_METADATA,
} from '../constants/stream-coordinator.constants.js';

/**
 * Where each parameter of a handler comes from.
 *
 * @internal
 */
export interface HandlerParameterLayout {
  /** Indexes of message parameters, with the message property they take (if any). */
  readonly message: ReadonlyArray<{
    readonly index: number;
    readonly property: string | undefined;
  }>;
  /** Indexes that receive the `StreamShardContext`. */
  readonly context: readonly number[];
  /** Whether any message parameter has its own pipes. */
  readonly hasParameterPipes: boolean;
  /** Whether any parameter uses a custom decorator (`createParamDecorator`). */
  readonly hasCustomParameters: boolean;
  /** Whether the handler has route-args metadata at all (message or custom parameters). */
  readonly hasRouteArgs: boolean;
}

/** Which kinds of enhancers a class or method declares. @internal */
export interface DeclaredEnhancers {
  readonly guards: boolean;
  readonly interceptors: boolean;
  readonly pipes: boolean;
  readonly filters: boolean;
}

/**
 * Typed reads of the metadata the decorators write, and of Nest's enhancer metadata.
 *
 * @internal
 */
@Injectable()
export class StreamHandlerMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The `@StreamShardHandler` metadata of a method, if it has one. */
  getHandlerMetadata(method: unknown): StreamShardHandlerMetadata | undefined {
    if (typeof method !== 'function') return undefined;
    return this.reflector.get<StreamShardHandlerMetadata | undefined>(
      STREAM_SHARD_HANDLER_METADATA,
      method,
    );
  }

  /** The parameter layout of a handler (`paramsHost`: the class that declares the method). */
  getParameterLayout(paramsHost: Function, methodName: string): HandlerParameterLayout {
    const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, paramsHost, methodName) ??
      {}) as RouteArgsMetadata;
    const context = (Reflect.getMetadata(SHARD_CONTEXT_PARAMS_METADATA, paramsHost, methodName) ??
      []) as number[];
    const message: Array<{ index: number; property: string | undefined }> = [];
    let hasParameterPipes = false;
    let hasCustomParameters = false;
    for (const [key, entry] of Object.entries(args)) {
      if (key.includes(CUSTOM_ROUTE_ARGS_METADATA)) {
        hasCustomParameters = true;
        continue;
      }
      message.push({
        index: entry.index,
        property: typeof entry.data === 'string' ? entry.data : undefined,
      });
      if ((entry.pipes?.length ?? 0) > 0) hasParameterPipes = true;
    }
    return {
      message,
      context: [...context],
      hasParameterPipes,
      hasCustomParameters,
      hasRouteArgs: Object.keys(args).length > 0,
    };
  }

  /** Which enhancers a class and one of its methods declare (`@UseGuards()` etc.). */
  getDeclaredEnhancers(classRef: Function, method: Function): DeclaredEnhancers {
    const declared = (key: string) =>
      hasEntries(Reflect.getMetadata(key, classRef)) ||
      hasEntries(Reflect.getMetadata(key, method));
    return {
      guards: declared(GUARDS_METADATA),
      interceptors: declared(INTERCEPTORS_METADATA),
      pipes: declared(PIPES_METADATA),
      filters: declared(EXCEPTION_FILTERS_METADATA),
    };
  }
}

function hasEntries(value: unknown): boolean {
  return Array.isArray(value) && value.length > 0;
}
