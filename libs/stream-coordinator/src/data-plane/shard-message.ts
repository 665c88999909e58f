import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * The time part (ms since the epoch) of a stream entry id `<ms>-<seq>` (or `<ms>`); `NaN` when
 * it does not start with digits.
 *
 * @publicApi
 */
export function entryIdTime(id: string): number {
  // digits up to the dash, without slicing (runs once per message read)
  let ms = 0;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c === 0x2d) return i === 0 ? Number.NaN : ms;
    if (c < 0x30 || c > 0x39) return Number.NaN;
    ms = ms * 10 + (c - 0x30);
  }
  return id.length === 0 ? Number.NaN : ms;
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
