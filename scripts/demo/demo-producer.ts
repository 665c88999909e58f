import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
  type RedisConnection,
} from '@redis-stream-coordinator/nestjs/internal';

/**
 * A steady keyed producer for the demo: `rate` messages per second over `keys` keys, each
 * message carrying its key's next sequence number, published through the library's routed
 * publisher (the same code as `StreamProducer`).
 */
export class DemoProducer {
  private timer: NodeJS.Timeout | undefined;
  private readonly seqs = new Map<string, number>();
  private inFlight: Promise<void> = Promise.resolve();
  published = 0;
  errors = 0;

  private readonly publisher: StreamPublisher;

  constructor(
    connection: RedisConnection,
    coordinatorUrl: string,
    token: string,
    private readonly stream: string,
    private readonly keys: number,
    private readonly rate: number,
  ) {
    const routing = new RoutingCache(
      new CoordinatorClient({ baseUrl: coordinatorUrl, token, requestTimeoutMs: 5000 }),
    );
    this.publisher = new StreamPublisher({ connection, routing });
  }

  /** Starts publishing (in ticks of 50 ms). */
  start(): void {
    const perTick = Math.max(1, Math.round(this.rate / 20));
    this.timer = setInterval(() => {
      this.inFlight = this.inFlight.then(() => this.tick(perTick));
    }, 50);
  }

  private async tick(count: number): Promise<void> {
    const batch = [];
    for (let i = 0; i < count; i++) {
      const key = `customer-${Math.floor(Math.random() * this.keys)}`;
      const seq = this.seqs.get(key) ?? 0;
      this.seqs.set(key, seq + 1);
      batch.push({ key, payload: { seq, amount: Math.round(Math.random() * 10_000) / 100 } });
    }
    try {
      await this.publisher.publishBatch(this.stream, batch);
      this.published += batch.length;
    } catch {
      this.errors++;
    }
  }

  /** Stops and waits for the last batch. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.inFlight;
  }

  /** How many messages each key got. */
  sent(): ReadonlyMap<string, number> {
    return this.seqs;
  }
}
