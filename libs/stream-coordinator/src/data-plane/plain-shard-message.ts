import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * `message` as a plain object whose own enumerable properties are the fields of
 * {@link StreamShardMessage}: what a handler's parameter pipes (and the handler behind them) get.
 * A message from a reader decodes its payload, and computes `publishedAt`, when first read, so
 * those are accessors of its class that a copy by own keys leaves out (class-transformer's
 * `plainToInstance` in Nest's `ValidationPipe` and `ParseArrayPipe`, an object spread,
 * `structuredClone`). Here both are own enumerable accessors that read the message's own: the
 * payload is still decoded once, when first read, and a payload that fails to decode still
 * records that on `message`, where the reader looks.
 */
export function plainShardMessage<T>(message: StreamShardMessage<T>): StreamShardMessage<T> {
  return {
    id: message.id,
    stream: message.stream,
    shard: message.shard,
    key: message.key,
    get payload(): T {
      return message.payload;
    },
    headers: message.headers,
    deliveryCount: message.deliveryCount,
    get publishedAt(): Date {
      return message.publishedAt;
    },
  };
}
