import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';

/**
 * The context type of a stream handler's execution context: in a guard, interceptor or filter,
 * `host.getType<StreamShardContextType>() === 'stream-shard'` tells a stream message from an
 * HTTP request or an RPC call.
 *
 * @publicApi
 */
export type StreamShardContextType = 'stream-shard';

/**
 * The value of {@link StreamShardContextType}.
 *
 * @publicApi
 */
export const STREAM_SHARD_CONTEXT_TYPE: StreamShardContextType = 'stream-shard';

/**
 * Where a message comes from and who handles it. Passed as the second argument of the execution
 * context (`host.getArgByIndex(1)`, or `host.switchToRpc().getContext()`; the message is
 * `getArgByIndex(0)` / `switchToRpc().getData()`), to handlers as their second parameter when they
 * use no parameter decorator, and to a parameter decorated with `@ShardContext()`.
 *
 * @publicApi
 */
export class StreamShardContext {
  readonly #message: StreamShardMessage;
  readonly #group: string;
  readonly #memberId: string;
  readonly #signal: AbortSignal;

  constructor(
    message: StreamShardMessage,
    group: string,
    memberId: string,
    signal: AbortSignal = new AbortController().signal,
  ) {
    this.#message = message;
    this.#group = group;
    this.#memberId = memberId;
    this.#signal = signal;
  }

  /**
   * Aborts when this member gives the message's shard up while the handler runs: the shard was
   * revoked, the member was fenced or removed (or fenced itself), or the application is shutting
   * down. Its `reason` is a `ShardReleasedError`. A long handler passes it to what it awaits
   * (`fetch(url, { signal })`, `setTimeout` from `node:timers/promises`, database drivers that take
   * one) or checks `signal.aborted` between steps, and throws `signal.reason` to stop: the message
   * is then neither retried nor dead-lettered, it stays pending for the shard's next owner. A
   * handler may also ignore it and finish; the shard is released once it settles (a revoke waits
   * at most the rebalance timeout, a shutdown at most `shutdownTimeoutMs`).
   */
  get signal(): AbortSignal {
    return this.#signal;
  }

  /** The logical stream (`orders`). */
  get stream(): string {
    return this.#message.stream;
  }

  /** The shard the message was read from. */
  get shard(): number {
    return this.#message.shard;
  }

  /** The routing key the producer published with. */
  get key(): string {
    return this.#message.key;
  }

  /** The Redis Stream entry id. */
  get id(): string {
    return this.#message.id;
  }

  /** Deliveries of this entry so far, this one included. */
  get deliveryCount(): number {
    return this.#message.deliveryCount;
  }

  /** The coordinator group (also the Redis consumer group). */
  get group(): string {
    return this.#group;
  }

  /** This member's id. */
  get memberId(): string {
    return this.#memberId;
  }

  /**
   * The message as read, before any pipe transformed it: the reader's own message object. A
   * handler with guards, interceptors, pipes or filters gets a plain copy of it instead (as
   * `switchToRpc().getData()` does), so the two are equal in every field but not the same object.
   */
  getMessage<T = unknown>(): StreamShardMessage<T> {
    return this.#message as StreamShardMessage<T>;
  }
}
