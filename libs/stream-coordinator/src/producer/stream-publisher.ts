import { fullJitter, sleep, type RandomSource } from '../data-plane/backoff.js';
import { encodeHeaders } from '../data-plane/entry-codec.js';
import { JSON_PAYLOAD_SERIALIZER } from '../data-plane/json-payload.serializer.js';
import { InvalidRoutingError } from '../errors/producer/invalid-routing.error.js';
import { PublishArgumentError } from '../errors/producer/publish-argument.error.js';
import { PublishError } from '../errors/producer/publish.error.js';
import { RoutingFetchError } from '../errors/producer/routing-fetch.error.js';
import { StaleRoutingError } from '../errors/producer/stale-routing.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import { isValidName } from '../protocol/limits.js';
import { runScript, type ScriptArgument } from '../redis/lua-script.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import type { CompiledRouting } from './compiled-routing.js';
import type {
  PublishBatchOptions,
  PublishMessage,
  PublishOptions,
  TrimPolicy,
} from './publish-options.interface.js';
import type { RoutingCache } from './routing-cache.js';
import { PUBLISH_SCRIPT } from './scripts/publish.script.js';

/**
 * Options of a {@link StreamPublisher}.
 */
export interface StreamPublisherOptions {
  /** The shared command connection (`createRedisConnection(options, 'command')`). */
  connection: RedisConnection;
  /** Routing metadata per stream. */
  routing: RoutingCache;
  /** Payload encoding. Default JSON. */
  serializer?: PayloadSerializer;
  /** Attempts per publish when shards refuse with STALE_ROUTING. Default 5. */
  maxAttempts?: number;
  /**
   * Backoff step: the n-th retry after a refusal waits up to `(n − 1) × retryDelayMs` (the
   * first goes at once), a failed routing fetch up to `n × max(retryDelayMs, 100 ms)`; each
   * delay is drawn with full jitter from [0, that]. Default 50 ms.
   */
  retryDelayMs?: number;
  /** Random source of the jitter, values in [0, 1). Default `Math.random` (tests inject one). */
  random?: RandomSource;
}

/** Entries per script call; a shard's chunks are written one after another (order kept). */
const MAX_ENTRIES_PER_CALL = 500;

/** A message ready to write: key, encoded payload, encoded headers (`''` = none). */
type Encoded = [key: string, payload: string | Buffer, headers: string];

/**
 * Publishes messages to the shards of a stream, routed by key with the coordinator's routing
 * metadata. Every write is one same-slot Lua call that refuses closed or removed shards
 * (`STALE_ROUTING`); the publisher then refreshes routing and retries transparently, a bounded
 * number of times. Messages with the same key keep their order: within a batch, and across
 * publishes the caller awaits one after another.
 */
export class StreamPublisher {
  private readonly connection: RedisConnection;
  private readonly routing: RoutingCache;
  private readonly serializer: PayloadSerializer;
  private readonly maxAttempts: number;
  private readonly retryDelayMs: number;
  private readonly random: RandomSource;

  constructor(options: StreamPublisherOptions) {
    this.connection = options.connection;
    this.routing = options.routing;
    this.serializer = options.serializer ?? JSON_PAYLOAD_SERIALIZER;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.retryDelayMs = options.retryDelayMs ?? 50;
    this.random = options.random ?? Math.random;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new PublishArgumentError(
        `maxAttempts must be a positive integer, got ${String(this.maxAttempts)}`,
      );
    }
    if (!Number.isFinite(this.retryDelayMs) || this.retryDelayMs < 0) {
      throw new PublishArgumentError(
        `retryDelayMs must be a number ≥ 0, got ${String(this.retryDelayMs)}`,
      );
    }
  }

  /**
   * Publishes one message to the shard `key` routes to. Resolves to the new entry id.
   *
   * @throws PublishArgumentError for a bad stream name, key, headers, trim policy or payload;
   *   StaleRoutingError when the shards stay closed; RoutingFetchError / InvalidRoutingError
   *   when routing cannot be had; PublishError for other Redis failures.
   */
  async publish(
    stream: string,
    key: string,
    payload: unknown,
    options: PublishOptions = {},
  ): Promise<string> {
    checkStream(stream);
    const encoded = this.encode(key, payload, options.headers, '');
    const trim = trimArguments(options.trim);
    for (let attempt = 1; ; attempt++) {
      const routing = this.routing.peek(stream) ?? (await this.fetchRouting(stream));
      const shardKey = routing.shardKeyFor(key);
      try {
        const ids = (await runScript(this.connection, PUBLISH_SCRIPT, [
          shardKey,
          ...trim,
          ...encoded,
        ])) as string[];
        return ids[0] as string;
      } catch (error) {
        if (!isStale(error)) throw new PublishError(stream, error);
        await this.afterStale(stream, routing, attempt, shardKey, error);
      }
    }
  }

  /**
   * Publishes many messages: grouped by shard, one script call per shard (large groups in
   * chunks, in order), shards in parallel. Resolves to the entry ids in input order. Per key,
   * messages are appended in input order.
   *
   * @throws as {@link publish}. Once the messages are encoded, every error it throws —
   *   PublishError, StaleRoutingError, RoutingFetchError, InvalidRoutingError — carries
   *   `publishedIds`: per input message, the id it was written with, or `undefined` when it was
   *   not (or may not have been) written. A caller that retries sends only the `undefined` ones,
   *   or it duplicates what other shards took before the failure.
   */
  async publishBatch(
    stream: string,
    messages: readonly PublishMessage[],
    options: PublishBatchOptions = {},
  ): Promise<string[]> {
    checkStream(stream);
    if (!Array.isArray(messages))
      throw new PublishArgumentError('publishBatch: messages must be an array');
    const encoded = messages.map((message, index) => {
      if (typeof message !== 'object' || message === null) {
        throw new PublishArgumentError(`publishBatch: message #${index} is not an object`);
      }
      return this.encode(message.key, message.payload, message.headers, ` (message #${index})`);
    });
    const trim = trimArguments(options.trim);
    const ids: Array<string | undefined> = Array.from({ length: messages.length }, () => undefined);
    let pending = encoded.map((_, index) => index);
    for (let attempt = 1; pending.length > 0; attempt++) {
      let routing: CompiledRouting;
      try {
        routing = this.routing.peek(stream) ?? (await this.fetchRouting(stream));
      } catch (error) {
        throw withPublishedIds(error, ids);
      }
      const groups = new Map<string, number[]>();
      for (const index of pending) {
        const shardKey = routing.shardKeyFor((encoded[index] as Encoded)[0]);
        const group = groups.get(shardKey);
        if (group === undefined) groups.set(shardKey, [index]);
        else group.push(index);
      }
      const outcomes = await Promise.all(
        [...groups].map(([shardKey, indices]) =>
          this.writeShard(shardKey, indices, encoded, trim, ids),
        ),
      );
      const stale: number[] = [];
      let staleError: unknown;
      let staleKey = '';
      for (const outcome of outcomes) {
        if (outcome === undefined) continue;
        if (!isStale(outcome.error)) throw new PublishError(stream, outcome.error, [...ids]);
        stale.push(...outcome.unwritten);
        staleError = outcome.error;
        staleKey = outcome.shardKey;
      }
      if (stale.length === 0) break;
      pending = stale.sort((a, b) => a - b);
      await this.afterStale(stream, routing, attempt, staleKey, staleError, ids);
    }
    return ids as string[];
  }

  /** Writes `indices` to one shard in order; on failure reports what was not written. */
  private async writeShard(
    shardKey: string,
    indices: number[],
    encoded: readonly Encoded[],
    trim: readonly ScriptArgument[],
    ids: Array<string | undefined>,
  ): Promise<{ shardKey: string; error: unknown; unwritten: number[] } | undefined> {
    for (let start = 0; start < indices.length; start += MAX_ENTRIES_PER_CALL) {
      const chunk = indices.slice(start, start + MAX_ENTRIES_PER_CALL);
      const args: ScriptArgument[] = [shardKey, ...trim];
      for (const index of chunk) args.push(...(encoded[index] as Encoded));
      try {
        const written = (await runScript(this.connection, PUBLISH_SCRIPT, args)) as string[];
        chunk.forEach((index, i) => {
          ids[index] = written[i];
        });
      } catch (error) {
        return { shardKey, error, unwritten: indices.slice(start) };
      }
    }
    return undefined;
  }

  private async afterStale(
    stream: string,
    routing: CompiledRouting,
    attempt: number,
    shardKey: string,
    error: unknown,
    publishedIds?: ReadonlyArray<string | undefined>,
  ): Promise<void> {
    this.routing.invalidate(stream, routing.routingEpoch);
    if (attempt >= this.maxAttempts) {
      throw new StaleRoutingError(stream, attempt, shardKey, {
        cause: error,
        publishedIds: publishedIds === undefined ? [] : [...publishedIds],
      });
    }
    // The first retry goes at once: the coordinator published the new layout before it closed
    // the old shards, so a refresh normally fixes it.
    await sleep(fullJitter((attempt - 1) * this.retryDelayMs, this.random));
  }

  /**
   * Fetches routing, retrying transient failures (coordinator restarting, unreachable) up to
   * `maxAttempts` times with a growing delay; an unknown stream fails at once.
   */
  private async fetchRouting(stream: string): Promise<CompiledRouting> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.routing.get(stream);
      } catch (error) {
        const code = (error as { cause?: { code?: unknown } }).cause?.code;
        if (
          !(error instanceof RoutingFetchError) ||
          code === 'STREAM_NOT_FOUND' ||
          attempt >= this.maxAttempts
        ) {
          throw error;
        }
        await sleep(fullJitter(attempt * Math.max(this.retryDelayMs, 100), this.random));
      }
    }
  }

  private encode(key: unknown, payload: unknown, headers: unknown, where: string): Encoded {
    if (typeof key !== 'string') {
      throw new PublishArgumentError(`the routing key${where} must be a string, got ${typeof key}`);
    }
    if (
      headers !== undefined &&
      (typeof headers !== 'object' || headers === null || Array.isArray(headers))
    ) {
      throw new PublishArgumentError(`headers${where} must be an object of strings`);
    }
    let encodedHeaders: string;
    try {
      encodedHeaders = encodeHeaders(headers as Record<string, string> | undefined);
    } catch (error) {
      throw new PublishArgumentError(`headers${where}: ${(error as Error).message}`);
    }
    let encodedPayload: string | Buffer;
    try {
      encodedPayload = this.serializer.serialize(payload);
    } catch (error) {
      throw new PublishArgumentError(
        `the payload${where} could not be serialized: ${error instanceof Error ? error.message : String(error)}`,
        { cause: error },
      );
    }
    return [key, encodedPayload, encodedHeaders];
  }
}

/**
 * `error` (from fetching routing during a batch) as the same error carrying a copy of `ids`, the
 * batch's ids so far; any other error as it is.
 */
function withPublishedIds(error: unknown, ids: ReadonlyArray<string | undefined>): unknown {
  if (error instanceof RoutingFetchError) {
    const copy = new RoutingFetchError(error.stream, error.cause, [...ids]);
    copy.stack = error.stack;
    return copy;
  }
  if (error instanceof InvalidRoutingError) {
    const copy = new InvalidRoutingError(error.stream, error.problem, [...ids]);
    copy.stack = error.stack;
    return copy;
  }
  return error;
}

function isStale(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('STALE_ROUTING');
}

function checkStream(stream: unknown): void {
  if (typeof stream !== 'string' || !isValidName(stream)) {
    throw new PublishArgumentError(
      `stream must be 1-128 characters of [A-Za-z0-9._-], got ${JSON.stringify(stream)}`,
    );
  }
}

/** The trim arguments of the publish script: mode, `~`/`=`, threshold. */
function trimArguments(trim: TrimPolicy | undefined): ScriptArgument[] {
  if (trim === undefined) return ['', '', ''];
  if (typeof trim !== 'object' || trim === null) {
    throw new PublishArgumentError('trim must be { maxLen } or { minId }');
  }
  const approximate = trim.approximate ?? true;
  if (typeof approximate !== 'boolean')
    throw new PublishArgumentError('trim.approximate must be a boolean');
  const exactness = approximate ? '~' : '=';
  if ('maxLen' in trim) {
    if (!Number.isInteger(trim.maxLen) || trim.maxLen < 0) {
      throw new PublishArgumentError(
        `trim.maxLen must be an integer ≥ 0, got ${String(trim.maxLen)}`,
      );
    }
    return ['MAXLEN', exactness, trim.maxLen];
  }
  if ('minId' in trim) {
    if (typeof trim.minId !== 'string' || !/^\d+(-\d+)?$/.test(trim.minId)) {
      throw new PublishArgumentError(
        `trim.minId must be a stream id like "1700000000000-0", got ${JSON.stringify(trim.minId)}`,
      );
    }
    return ['MINID', exactness, trim.minId];
  }
  throw new PublishArgumentError('trim must be { maxLen } or { minId }');
}
