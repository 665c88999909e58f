import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * The time part (ms since the epoch) of a stream entry id `<ms>-<seq>`.
 *
 * @publicApi
 */
export function entryIdTime(id: string): number {
  const dash = id.indexOf('-');
  return Number(dash < 0 ? id : id.slice(0, dash));
}

/**
 * The message object handed to handlers (a plain class, so it serializes as JSON like a
 * literal would).
 *
 * @publicApi
 */
export class ShardMessage<T = unknown> implements StreamShardMessage<T> {
  readonly publishedAt: Date;

  constructor(
    readonly id: string,
    readonly stream: string,
    readonly shard: number,
    readonly key: string,
    readonly payload: T,
    readonly headers: Readonly<Record<string, string>>,
    readonly deliveryCount: number,
  ) {
    this.publishedAt = new Date(entryIdTime(id));
  }
}
