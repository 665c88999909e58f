import type { ParamsFactory } from '@nestjs/core';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { SHARD_MESSAGE_PARAMTYPE } from '../constants/stream-coordinator.constants.js';

/**
 * Supplies the value of a `@ShardMessage()` parameter (or the implicit first parameter) from the
 * execution-context arguments `[message, context]`, for `ExternalContextCreator`.
 *
 * @internal
 */
export class StreamShardParamsFactory implements ParamsFactory {
  exchangeKeyForValue(type: number, data: unknown, args: unknown): unknown {
    if (type !== SHARD_MESSAGE_PARAMTYPE || !Array.isArray(args)) return undefined;
    const message = args[0] as StreamShardMessage | undefined;
    return typeof data === 'string' && message !== undefined
      ? (message as unknown as Record<string, unknown>)[data]
      : message;
  }
}
