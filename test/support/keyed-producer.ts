import type { Redis } from 'ioredis';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
  type CompiledRouting,
} from '@redis-stream-coordinator/nestjs/internal';
import { TEST_TOKENS } from './coordinator-process.js';
import type { ProducedMessage } from './invariants/index.js';
import { connectRedis } from './redis-client.js';

/** Options of {@link KeyedProducer}. */
export interface KeyedProducerOptions {
  readonly redisUrl: string;
  readonly coordinatorUrl: string;
  readonly stream: string;
  readonly token?: string;
}

/** What to publish in one {@link KeyedProducer.produce} call. */
export interface ProduceRun {
  /** Messages in all. */
  readonly total: number;
  /** Keys `<keyPrefix><n>`, n in [0, keys); message i goes to key i mod keys. */
  readonly keys: number;
  /** Messages per second (spread in 20 ms ticks); `Infinity`: as fast as possible. */
  readonly ratePerSecond: number;
  readonly keyPrefix?: string;
  /** Called after each published batch with the running total. */
  readonly onProgress?: (published: number) => void;
  /**
   * Called before each batch with the number published so far; a returned promise holds the
   * production until it resolves (lets a test keep traffic flowing through each of its phases,
   * however slow the machine).
   */
  readonly holdAt?: (published: number) => Promise<void> | undefined;
}

/**
 * A test producer of keyed messages with per-key sequence numbers (`payload = {seq}`), written
 * through the library's routed publisher. It remembers every message's key, sequence number,
 * shard and entry id for the invariant checker.
 */
export class KeyedProducer {
  private readonly redis: Redis;
  private readonly routing: RoutingCache;
  private readonly publisher: StreamPublisher;
  private readonly seqs = new Map<string, number>();
  readonly produced: ProducedMessage[] = [];

  constructor(private readonly options: KeyedProducerOptions) {
    this.redis = connectRedis(options.redisUrl);
    this.routing = new RoutingCache(
      new CoordinatorClient({
        baseUrl: options.coordinatorUrl,
        token: options.token ?? TEST_TOKENS.member,
        requestTimeoutMs: 5000,
      }),
    );
    this.publisher = new StreamPublisher({ connection: this.redis, routing: this.routing });
  }

  /** The stream's routing (fetched once). */
  routingOf(): Promise<CompiledRouting> {
    return this.routing.get(this.options.stream);
  }

  /** Publishes `run.total` messages at `run.ratePerSecond`; resolves when all are written. */
  async produce(run: ProduceRun): Promise<ProducedMessage[]> {
    const routing = await this.routingOf();
    const prefix = run.keyPrefix ?? 'k';
    const paced = Number.isFinite(run.ratePerSecond);
    const perTick = paced ? Math.max(1, Math.round(run.ratePerSecond / 50)) : 500;
    const tickMs = (1000 * perTick) / run.ratePerSecond;
    let due = performance.now();
    const out: ProducedMessage[] = [];
    for (let sent = 0; sent < run.total;) {
      const held = run.holdAt?.(sent);
      if (held) {
        await held;
        due = performance.now(); // no burst to catch up after a hold
      }
      const batch: Array<{ key: string; payload: { seq: number } }> = [];
      for (let i = 0; i < perTick && sent < run.total; i++, sent++) {
        const key = `${prefix}${sent % run.keys}`;
        const seq = this.seqs.get(key) ?? 0;
        this.seqs.set(key, seq + 1);
        batch.push({ key, payload: { seq } });
      }
      const ids = await this.publisher.publishBatch(this.options.stream, batch);
      batch.forEach((m, i) => {
        out.push({
          key: m.key,
          seq: m.payload.seq,
          shard: routing.shardFor(m.key),
          id: ids[i] as string,
        });
      });
      this.produced.push(...out.slice(out.length - batch.length));
      run.onProgress?.(sent);
      if (paced) {
        due += tickMs;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    }
    return out;
  }

  /** Publishes one message with an explicit key (its sequence number continues the key's). */
  async publishOne(key: string): Promise<ProducedMessage> {
    const routing = await this.routingOf();
    const seq = this.seqs.get(key) ?? 0;
    this.seqs.set(key, seq + 1);
    const id = await this.publisher.publish(this.options.stream, key, { seq });
    const message = { key, seq, shard: routing.shardFor(key), id };
    this.produced.push(message);
    return message;
  }

  /** Publishes one message per key in one batch (one script call per shard, sent together). */
  async publishTogether(keys: readonly string[]): Promise<ProducedMessage[]> {
    const routing = await this.routingOf();
    const batch = keys.map((key) => {
      const seq = this.seqs.get(key) ?? 0;
      this.seqs.set(key, seq + 1);
      return { key, payload: { seq } };
    });
    const ids = await this.publisher.publishBatch(this.options.stream, batch);
    const out = batch.map((m, i) => ({
      key: m.key,
      seq: m.payload.seq,
      shard: routing.shardFor(m.key),
      id: ids[i] as string,
    }));
    this.produced.push(...out);
    return out;
  }

  close(): void {
    this.redis.disconnect();
  }
}
