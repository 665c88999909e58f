import {
  CoordinatorClient,
  type RedisConnection,
  RoutingCache,
  StreamPublisher,
} from '@redis-stream-coordinator/nestjs/internal';

/** Options of a {@link KeyedLoad}. */
export interface KeyedLoadOptions {
  readonly connection: RedisConnection;
  readonly coordinatorUrl: string;
  readonly token: string;
  readonly stream: string;
  /** Distinct routing keys (`key-0` … `key-<n-1>`). */
  readonly keys: number;
  /** Messages per second. */
  readonly rate: number;
  /** Publish tick (one `publishBatch` per tick). Default 20 ms. */
  readonly tickMs?: number;
  /** Publisher attempts on STALE_ROUTING (library default 5). */
  readonly maxAttempts?: number;
  /** Publisher delay before the n-th retry is `n × retryDelayMs` (library default 50 ms). */
  readonly retryDelayMs?: number;
}

/** One `publishBatch` call as measured. */
export interface PublishSample {
  /** Wall-clock ms when the call started. */
  readonly at: number;
  /** How long the call took, ms. */
  readonly ms: number;
  readonly messages: number;
}

/**
 * A steady keyed producer for tests and benchmarks: `rate` messages per second over `keys` keys,
 * each message `{seq}` carrying its key's next sequence number, published with the library's
 * routed publisher (`StreamPublisher` + `RoutingCache` + `CoordinatorClient`). One batch per tick,
 * each awaited before the next, so per key the messages are written in sequence order. Records
 * every call's latency and every error (a test expects none).
 */
export class KeyedLoad {
  readonly seqs = new Map<string, number>();
  readonly samples: PublishSample[] = [];
  readonly errors: Error[] = [];
  published = 0;
  private timer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private startedAt = 0;
  private scheduled = 0;
  private readonly publisher: StreamPublisher;
  private readonly routing: RoutingCache;

  constructor(private readonly options: KeyedLoadOptions) {
    this.routing = new RoutingCache(
      new CoordinatorClient({
        baseUrl: options.coordinatorUrl,
        token: options.token,
        requestTimeoutMs: 5000,
      }),
    );
    this.publisher = new StreamPublisher({
      connection: options.connection,
      routing: this.routing,
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
      ...(options.retryDelayMs !== undefined ? { retryDelayMs: options.retryDelayMs } : {}),
    });
  }

  /** Fetches routing once (so the first tick is not slowed by it), then starts ticking. */
  async start(): Promise<void> {
    await this.routing.get(this.options.stream);
    this.startedAt = performance.now();
    this.scheduled = 0;
    this.timer = setInterval(() => {
      const due =
        Math.floor(((performance.now() - this.startedAt) / 1000) * this.options.rate) -
        this.scheduled;
      if (due <= 0) return;
      this.scheduled += due;
      this.chain = this.chain.then(() => this.publish(due));
    }, this.options.tickMs ?? 20);
  }

  /** Publishes `count` extra messages at once (after the batches already queued); resolves when written. */
  burst(count: number): Promise<void> {
    this.chain = this.chain.then(() => this.publish(count));
    return this.chain;
  }

  /** Stops ticking and waits for the last batch. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.chain;
  }

  /** Routing epoch the producer writes with now (`undefined` before the first fetch or after a refusal). */
  get routingEpoch(): number | undefined {
    return this.routing.peek(this.options.stream)?.routingEpoch;
  }

  /** Total messages sent. */
  get sent(): number {
    let n = 0;
    for (const v of this.seqs.values()) n += v;
    return n;
  }

  private async publish(count: number): Promise<void> {
    const batch: Array<{ key: string; payload: { seq: number } }> = [];
    for (let i = 0; i < count; i++) {
      const key = `key-${Math.floor(Math.random() * this.options.keys)}`;
      const seq = this.seqs.get(key) ?? 0;
      this.seqs.set(key, seq + 1);
      batch.push({ key, payload: { seq } });
    }
    const at = Date.now();
    const t0 = performance.now();
    try {
      await this.publisher.publishBatch(this.options.stream, batch);
      this.published += batch.length;
    } catch (error) {
      this.errors.push(error instanceof Error ? error : new Error(String(error)));
    }
    this.samples.push({ at, ms: performance.now() - t0, messages: batch.length });
  }
}
