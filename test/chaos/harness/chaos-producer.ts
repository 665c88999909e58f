import type { Redis } from 'ioredis';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
  type CompiledRouting,
} from '@redis-stream-coordinator/nestjs';
import type { ProducedMessage } from '../../support/invariants/index.js';
import type { SeededRandom } from './seeded-random.js';
import { connectRedis } from '../../support/redis-client.js';

/** Options of a {@link ChaosProducer}. */
export interface ChaosProducerOptions {
  readonly redisUrl: string;
  /** Where routing comes from (a front that reaches any live coordinator replica). */
  readonly coordinatorUrl: string;
  readonly token: string;
  readonly stream: string;
  /** Keys `k0` … `k<keys-1>`. */
  readonly keys: number;
  readonly ratePerSecond: number;
  /** Picks each message's key (seeded: the same run publishes the same key sequence). */
  readonly random: SeededRandom;
  readonly log: (line: string) => void;
}

interface Outgoing {
  readonly key: string;
  readonly seq: number;
}

/** Messages per publish call at most (a backlog after a stall is caught up in such batches). */
const MAX_BATCH = 400;
const TICK_MS = 50;

/**
 * The chaos run's producer: keyed messages (`payload = {seq}`, per-key sequence numbers) at a
 * steady rate through the library's routed publisher, one batch at a time (so per key the
 * messages are written in sequence order), and it never gives up: Redis restarts, coordinator
 * replicas away and reshards only delay it.
 *
 * It knows every message's shard and entry id, even when a write's outcome is unknown (the
 * connection died with the call in flight: its Redis client does not re-send unanswered
 * commands, so a write happens at most once per attempt): it then looks for the message at the
 * tail of the shards it can be on and publishes again only what is not there. When routing
 * changed during a call (a reshard), each message's shard is looked up the same way.
 */
export class ChaosProducer {
  readonly produced: ProducedMessage[] = [];
  /** Publish calls that failed (each retried). */
  failures = 0;
  /** Messages whose shard or outcome had to be looked up. */
  resolved = 0;
  private readonly seqs = new Map<string, number>();
  private readonly redis: Redis;
  private readonly routing: RoutingCache;
  private readonly publisher: StreamPublisher;
  private running: Promise<void> | undefined;
  private stopping = false;
  private lastError = '';

  constructor(private readonly options: ChaosProducerOptions) {
    this.redis = connectRedis(options.redisUrl, {
      maxRetriesPerRequest: 2,
      // A call cut off by a Redis crash is not sent again (it may have been applied: see
      // `resolve`). ioredis then never settles it, hence the timeout.
      autoResendUnfulfilledCommands: false,
      commandTimeout: 4000,
      retryStrategy: (times) => Math.min(50 * times, 500),
    });
    this.redis.on('error', () => undefined);
    this.routing = new RoutingCache(
      new CoordinatorClient({
        baseUrl: options.coordinatorUrl,
        token: options.token,
        requestTimeoutMs: 3000,
      }),
    );
    this.publisher = new StreamPublisher({
      connection: this.redis,
      routing: this.routing,
      maxAttempts: 8,
      retryDelayMs: 100,
    });
  }

  /** Messages published so far. */
  get published(): number {
    return this.produced.length;
  }

  /** Starts publishing at the configured rate. */
  start(): void {
    this.running ??= this.loop();
  }

  /** Stops after the batch in flight is fully written; resolves when it is. */
  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  /** Stops and closes the Redis connection. */
  async close(): Promise<void> {
    await this.stop();
    this.redis.disconnect();
  }

  private async loop(): Promise<void> {
    const started = performance.now();
    let scheduled = 0;
    while (!this.stopping) {
      const due = Math.floor(((performance.now() - started) / 1000) * this.options.ratePerSecond);
      const count = Math.min(MAX_BATCH, due - scheduled);
      if (count <= 0) {
        await sleep(TICK_MS);
        continue;
      }
      scheduled += count;
      const batch: Outgoing[] = [];
      for (let i = 0; i < count; i++) {
        const key = `k${this.options.random.int(0, this.options.keys - 1)}`;
        const seq = this.seqs.get(key) ?? 0;
        this.seqs.set(key, seq + 1);
        batch.push({ key, seq });
      }
      await this.publishFully(batch);
    }
  }

  /** Writes `batch` exactly once per message, retrying what is known not to be written. */
  private async publishFully(batch: readonly Outgoing[]): Promise<void> {
    let pending = [...batch];
    for (let attempt = 1; pending.length > 0; attempt++) {
      const before = await this.currentRouting();
      if (before === null) {
        await sleep(Math.min(1000, 100 * attempt));
        continue;
      }
      try {
        const ids = await this.publisher.publishBatch(
          this.options.stream,
          pending.map((m) => ({ key: m.key, payload: { seq: m.seq } })),
        );
        const after = this.routing.peek(this.options.stream);
        if (after === undefined || after.routingEpoch !== before.routingEpoch) {
          pending = await this.resolve(pending, ids, before);
        } else {
          pending.forEach((m, i) => this.record(m, before.shardFor(m.key), ids[i] as string));
          pending = [];
        }
      } catch (error) {
        this.failures++;
        const text = error instanceof Error ? error.message : String(error);
        if (text !== this.lastError)
          this.options.log(`producer: publish failed (retrying): ${text}`);
        this.lastError = text;
        await this.waitForRedis();
        const partial = (error as { publishedIds?: ReadonlyArray<string | undefined> })
          .publishedIds;
        pending = await this.resolveUntil(pending, partial ?? [], before);
        if (pending.length > 0) await sleep(Math.min(1000, 50 * attempt));
      }
    }
  }

  /** {@link resolve}, retried while Redis or the coordinator is still away. */
  private async resolveUntil(
    pending: readonly Outgoing[],
    ids: ReadonlyArray<string | undefined>,
    before: CompiledRouting,
  ): Promise<Outgoing[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.resolve(pending, ids, before);
      } catch (error) {
        if (attempt >= 120) {
          throw new Error(`producer: cannot tell whether ${pending.length} messages were written`, {
            cause: error,
          });
        }
        await sleep(Math.min(1000, 100 * attempt));
        await this.waitForRedis();
      }
    }
  }

  /**
   * Finds where each of `pending` was written (its id when known, else at the tail of each
   * shard it can be on: the one its key routed to before the call and the one it routes to now),
   * records those found and returns the rest, in order (never written: to be published again).
   */
  private async resolve(
    pending: readonly Outgoing[],
    ids: ReadonlyArray<string | undefined>,
    before: CompiledRouting,
  ): Promise<Outgoing[]> {
    this.routing.invalidate(this.options.stream);
    const now = await this.routing.get(this.options.stream);
    const candidates = (key: string): Array<{ shard: number; shardKey: string }> => {
      const out = [{ shard: before.shardFor(key), shardKey: before.shardKeyFor(key) }];
      if (now.shardKeyFor(key) !== out[0]?.shardKey) {
        out.push({ shard: now.shardFor(key), shardKey: now.shardKeyFor(key) });
      }
      return out;
    };
    // every candidate shard's tail, once (only this producer writes, one call at a time)
    const perShard = new Map<string, number>();
    for (const m of pending) {
      for (const c of candidates(m.key))
        perShard.set(c.shardKey, (perShard.get(c.shardKey) ?? 0) + 1);
    }
    const found = new Map<string, { shardKey: string; id: string }>();
    for (const [shardKey, count] of perShard) {
      const tail = await this.redis.xrevrange(shardKey, '+', '-', 'COUNT', count + 50);
      for (const [id, fields] of tail) {
        const entry = decode(fields);
        if (entry !== null) found.set(`${entry.key}#${entry.seq}@${shardKey}`, { shardKey, id });
      }
    }
    const rest: Outgoing[] = [];
    pending.forEach((m, i) => {
      const hit = candidates(m.key).find((c) => {
        const f = found.get(`${m.key}#${m.seq}@${c.shardKey}`);
        return f !== undefined && (ids[i] === undefined || f.id === ids[i]);
      });
      if (hit === undefined) {
        rest.push(m);
        return;
      }
      this.resolved++;
      this.record(
        m,
        hit.shard,
        (found.get(`${m.key}#${m.seq}@${hit.shardKey}`) as { id: string }).id,
      );
    });
    return rest;
  }

  private record(m: Outgoing, shard: number, id: string): void {
    this.produced.push({ key: m.key, seq: m.seq, shard, id });
  }

  private async currentRouting(): Promise<CompiledRouting | null> {
    try {
      return (
        this.routing.peek(this.options.stream) ?? (await this.routing.get(this.options.stream))
      );
    } catch {
      return null;
    }
  }

  /**
   * Waits until Redis answers on this client. A reply on the same connection also means every
   * call sent on it before was applied (one connection's calls run in order).
   */
  private async waitForRedis(): Promise<void> {
    for (let attempt = 1; !this.stopping || attempt < 600; attempt++) {
      try {
        await this.redis.ping();
        return;
      } catch {
        await sleep(100);
      }
    }
  }
}

/** `{key, seq}` of a shard entry written by this producer, or null. */
function decode(fields: readonly string[]): { key: string; seq: number } | null {
  let key: string | undefined;
  let payload: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'key') key = fields[i + 1];
    else if (fields[i] === 'payload') payload = fields[i + 1];
  }
  if (key === undefined || payload === undefined) return null;
  try {
    const seq = (JSON.parse(payload) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? { key, seq } : null;
  } catch {
    return null;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
