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
 * The message object handed to handlers. `publishedAt` is computed from the id when first read
 * (most handlers never read it); {@link toJSON} includes it, so the message serializes as JSON
 * like a literal with every field would.
 *
 * @publicApi
 */
export class ShardMessage<T = unknown> implements StreamShardMessage<T> {
  private publishedAtDate: Date | undefined;

  constructor(
    readonly id: string,
    readonly stream: string,
    readonly shard: number,
    readonly key: string,
    readonly payload: T,
    readonly headers: Readonly<Record<string, string>>,
    readonly deliveryCount: number,
  ) {}

  /** When the entry was added: the time part of its id. */
  get publishedAt(): Date {
    return (this.publishedAtDate ??= new Date(entryIdTime(this.id)));
  }

  /** The message as a plain object (what `JSON.stringify` writes). */
  toJSON(): StreamShardMessage<T> {
    return {
      id: this.id,
      stream: this.stream,
      shard: this.shard,
      key: this.key,
      payload: this.payload,
      headers: this.headers,
      deliveryCount: this.deliveryCount,
      publishedAt: this.publishedAt,
    };
  }
}
