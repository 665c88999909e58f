import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import {
  InvalidRoutingError,
  PublishError,
  RoutingFetchError,
  StaleRoutingError,
  StreamProducer,
} from '@redis-stream-coordinator/nestjs';
import { KeyedOutbox } from './keyed-outbox.js';
import type { ProducerConfig } from './producer-config.js';
import { PRODUCER_CONFIG } from './producer.tokens.js';

/** Interval of the publish loop when a rate is set. */
const TICK_MS = 50;
/** Longest pause after a failed publish. */
const MAX_BACKOFF_MS = 2000;

/** What `GET /status` reports. */
export interface TrafficStatus {
  readonly stream: string;
  /** Messages confirmed written. */
  readonly published: number;
  /** Messages generated but not confirmed yet. */
  readonly waiting: number;
  /** Failed publish calls. */
  readonly errors: number;
  /** The last failure, `null` once a publish succeeded again. */
  readonly lastError: string | null;
  /** MAX_MESSAGES reached and everything confirmed. */
  readonly done: boolean;
  /** Messages generated per key (`key → next seq`). */
  readonly sent: Record<string, number>;
}

/**
 * Publishes keyed messages at `RATE` per second through the library's {@link StreamProducer}
 * (routing from the coordinator, same-slot fenced publish script). One batch at a time: per key
 * the messages reach their shard in sequence order; a batch that failed (Redis down, failover,
 * a reshard) is retried, oldest first, with backoff.
 */
@Injectable()
export class KeyedTrafficService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Producer');
  private readonly outbox: KeyedOutbox;
  private readonly stop = new AbortController();
  private loop: Promise<void> = Promise.resolve();
  private errors = 0;
  private consecutiveErrors = 0;
  private lastError: string | null = null;

  constructor(
    @Inject(PRODUCER_CONFIG) private readonly config: ProducerConfig,
    private readonly producer: StreamProducer,
  ) {
    this.outbox = new KeyedOutbox(config.keyCount, config.maxMessages);
  }

  /** A snapshot for `/status` and the health routes. */
  status(): TrafficStatus {
    return {
      stream: this.config.stream,
      published: this.outbox.confirmed,
      waiting: this.outbox.waiting,
      errors: this.errors,
      lastError: this.lastError,
      done: this.outbox.done,
      sent: this.outbox.sentPerKey(),
    };
  }

  onApplicationBootstrap(): void {
    this.loop = this.run();
  }

  /** Stops generating, lets the batch in flight settle. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stop.abort();
    await this.loop;
    this.logger.log(`stopped after ${this.outbox.confirmed} messages`);
  }

  private async run(): Promise<void> {
    const { rate, batchSize } = this.config;
    let credit = 0;
    let last = performance.now();
    while (!this.stop.signal.aborted) {
      const now = performance.now();
      credit = rate === 0 ? batchSize : Math.min(batchSize, credit + ((now - last) * rate) / 1000);
      last = now;
      // Backpressure: nothing new while a full batch is still waiting (e.g. during an outage).
      const room = Math.max(0, batchSize - this.outbox.waiting);
      credit -= this.outbox.generate(Math.min(room, Math.floor(credit)));
      const batch = this.outbox.peek(batchSize);
      if (batch.length > 0) await this.publish(batch);
      if (this.outbox.done) break;
      if (rate > 0 || batch.length === 0) await this.pause(TICK_MS);
    }
  }

  private async publish(batch: ReturnType<KeyedOutbox['peek']>): Promise<void> {
    try {
      await this.producer.publishBatch(
        this.config.stream,
        batch,
        this.config.trimMaxLen > 0 ? { trim: { maxLen: this.config.trimMaxLen } } : {},
      );
      this.outbox.settle(
        batch,
        batch.map(() => true),
      );
      if (this.lastError !== null) this.logger.log('publishing again');
      this.lastError = null;
      this.consecutiveErrors = 0;
    } catch (error) {
      // what was written before the failure is not published again
      const ids =
        error instanceof PublishError ||
        error instanceof StaleRoutingError ||
        error instanceof RoutingFetchError ||
        error instanceof InvalidRoutingError
          ? error.publishedIds
          : [];
      this.outbox.settle(
        batch,
        batch.map((_, i) => ids[i] !== undefined),
      );
      this.errors++;
      this.consecutiveErrors++;
      this.lastError = error instanceof Error ? error.message : String(error);
      if (this.consecutiveErrors === 1)
        this.logger.warn(`publish failed, retrying: ${this.lastError}`);
      // full jitter: producers that failed together do not retry in lockstep
      await this.pause(
        Math.random() * Math.min(MAX_BACKOFF_MS, 50 * 2 ** Math.min(this.consecutiveErrors, 6)),
      );
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.stop.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      const signal = this.stop.signal;
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }
}
