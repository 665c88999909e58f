import type { ParamsFactory } from '@nestjs/core';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { SHARD_MESSAGE_PARAMTYPE } from '../constants/stream-coordinator.constants.js';
import { plainShardMessage } from '../data-plane/plain-shard-message.js';

/**
 * Supplies the value of a `@ShardMessage()` parameter (or the implicit first parameter) from the
 * execution-context arguments `[message, context]`, for `ExternalContextCreator`: a property of
 * the message, or the message (each message of a batch) as a plain object, so that pipes which
 * copy it by its own keys keep the payload (see {@link plainShardMessage}).
 *
 * @internal
 */
export class StreamShardParamsFactory implements ParamsFactory {
  exchangeKeyForValue(type: number, data: unknown, args: unknown): unknown {
    if (type !== SHARD_MESSAGE_PARAMTYPE || !Array.isArray(args)) return undefined;
    const message = args[0] as StreamShardMessage | readonly StreamShardMessage[] | undefined;
    if (message === undefined) return undefined;
    if (typeof data === 'string') return (message as unknown as Record<string, unknown>)[data];
    // (a batch handler's parameter is the batch)
    return Array.isArray(message)
      ? (message as readonly StreamShardMessage[]).map(plainShardMessage)
      : plainShardMessage(message as StreamShardMessage);
  }
}
