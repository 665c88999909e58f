/**
 * One message handed to a `@StreamShardHandler` method.
 *
 * @publicApi
 */
export interface StreamShardMessage<T = unknown> {
  /** The Redis Stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  /** The logical stream (`orders`). */
  readonly stream: string;
  /** The shard id the message was read from. */
  readonly shard: number;
  /** The routing key the producer published with. */
  readonly key: string;
  /** The decoded payload (JSON by default; see the `serializer` module option). */
  readonly payload: T;
  /** Headers the producer attached; empty when none. */
  readonly headers: Readonly<Record<string, string>>;
  /** How many times Redis has delivered this entry, this delivery included (1 on first delivery). */
  readonly deliveryCount: number;
  /** When the entry was appended (the time part of its id). */
  readonly publishedAt: Date;
}
