import type { PipeTransform, Type } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { SHARD_MESSAGE_PARAMTYPE } from '../constants/stream-coordinator.constants.js';
import { NOT_A_HANDLER_PARAMETER } from '../constants/stream-coordinator.messages.js';
import type { RouteArgsMetadata } from './stream-shard-handler-metadata.interface.js';

/** A pipe instance or class, as `@UsePipes()` takes it. @publicApi */
export type ShardMessagePipe = PipeTransform | Type<PipeTransform>;

/**
 * Injects the message (or one of its fields) into a `@StreamShardHandler` parameter, after the
 * global, class, method and the given parameter pipes ran on it.
 *
 * Not needed for the common case: a handler without parameter decorators gets the message as its
 * first parameter (pipes apply to it) and the `StreamShardContext` as its second. Once one
 * parameter is decorated, decorate every parameter the handler uses.
 *
 * @example
 * ```ts
 * @StreamShardHandler('orders')
 * handle(@ShardMessage('payload', new ParseOrderPipe()) order: Order, @ShardContext() ctx: StreamShardContext) {}
 * ```
 * @publicApi
 */
export function ShardMessage(...pipes: ShardMessagePipe[]): ParameterDecorator;
export function ShardMessage(
  property: keyof StreamShardMessage,
  ...pipes: ShardMessagePipe[]
): ParameterDecorator;
export function ShardMessage(
  propertyOrPipe?: keyof StreamShardMessage | ShardMessagePipe,
  ...pipes: ShardMessagePipe[]
): ParameterDecorator {
  const property = typeof propertyOrPipe === 'string' ? propertyOrPipe : undefined;
  const allPipes =
    propertyOrPipe === undefined || typeof propertyOrPipe === 'string'
      ? pipes
      : [propertyOrPipe, ...pipes];
  return (target, key, index) => {
    if (key === undefined) {
      const className = typeof target === 'function' ? target.name : target.constructor.name;
      throw new InvalidStreamHandlerError(
        className,
        'constructor',
        NOT_A_HANDLER_PARAMETER('@ShardMessage()'),
      );
    }
    const host = target.constructor;
    const existing = (Reflect.getMetadata(ROUTE_ARGS_METADATA, host, key) ??
      {}) as RouteArgsMetadata;
    Reflect.defineMetadata(
      ROUTE_ARGS_METADATA,
      {
        ...existing,
        [`${SHARD_MESSAGE_PARAMTYPE}:${index}`]: { index, data: property, pipes: allPipes },
      },
      host,
      key,
    );
  };
}
