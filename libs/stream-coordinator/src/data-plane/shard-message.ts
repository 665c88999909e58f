import { UndecodableEntryError } from '../errors/data-plane/undecodable-entry.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * The time part (ms since the epoch) of a stream entry id `<ms>-<seq>` (or `<ms>`); `NaN` when
 * it does not start with digits.
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
 * The message object handed to handlers.
 *
 * The payload is decoded when `payload` is first read, then kept: a handler that never reads it
 * (one that routes on `key` or `headers`, or a no-op) never pays for decoding. When the
 * serializer rejects the payload, that read throws {@link UndecodableEntryError} (every read,
 * not only the first) and {@link payloadError} holds it; the reader then dead-letters the entry
 * (reason `undecodable`, no retries) whatever the handler did next.
 *
 * `publishedAt` is computed from the id when first read; {@link toJSON} includes it and the
 * payload, so the message serializes as JSON like a literal with every field would. Both are
 * getters, so an object spread (`{ ...message }`) leaves them out: copy with {@link toJSON}.
 *
 * Construct one with a decoded payload to unit-test a handler:
 * `new ShardMessage('1-0', 'orders', 0, 'customer-1', { total: 3 }, {}, 1)`.
 */
export class ShardMessage<T = unknown> implements StreamShardMessage<T> {
  private publishedAtDate: Date | undefined;
  private value: T | undefined;
  /** The encoded payload until it is decoded. */
  private encodedPayload: Buffer | undefined = undefined;
  private serializer: PayloadSerializer | undefined = undefined;
  private decodeError: UndecodableEntryError | undefined = undefined;

  constructor(
    readonly id: string,
    readonly stream: string,
    readonly shard: number,
    readonly key: string,
    payload: T,
    readonly headers: Readonly<Record<string, string>>,
    readonly deliveryCount: number,
  ) {
    this.value = payload;
  }

  /**
   * A message whose payload `serializer` decodes from `encoded` when first read (what the
   * reader hands to handlers).
   */
  static encoded(
    id: string,
    stream: string,
    shard: number,
    key: string,
    encoded: Buffer,
    serializer: PayloadSerializer,
    headers: Readonly<Record<string, string>>,
    deliveryCount: number,
  ): ShardMessage {
    const message = new ShardMessage<unknown>(
      id,
      stream,
      shard,
      key,
      undefined,
      headers,
      deliveryCount,
    );
    message.encodedPayload = encoded;
    message.serializer = serializer;
    return message;
  }

  /**
   * The decoded payload.
   *
   * @throws UndecodableEntryError when the serializer rejects the encoded payload.
   */
  get payload(): T {
    if (this.encodedPayload !== undefined) this.decode(this.encodedPayload);
    if (this.decodeError !== undefined) throw this.decodeError;
    return this.value as T;
  }

  /** Why the payload could not be decoded, once a read of {@link payload} failed; else `undefined`. */
  get payloadError(): UndecodableEntryError | undefined {
    return this.decodeError;
  }

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

  private decode(encoded: Buffer): void {
    this.encodedPayload = undefined;
    try {
      this.value = (this.serializer as PayloadSerializer).deserialize(encoded) as T;
    } catch (error) {
      this.decodeError = new UndecodableEntryError(
        this.id,
        `the serializer rejected the payload (${error instanceof Error ? error.message : String(error)})`,
        { cause: error },
      );
    }
    this.serializer = undefined;
  }
}
