import type { Redis } from 'ioredis';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
  type CompiledRouting,
} from '@redis-stream-coordinator/nestjs/internal';
import {
  handledCopies,
  PublishCallLog,
  settlePublished,
  type OutgoingMessage,
  type UnsettledMessage,
} from './publish-calls.js';
import type { HandledRecord, ProducedMessage } from '../../support/invariants/index.js';
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

type Outgoing = OutgoingMessage;

/** Messages per publish call at most (a backlog after a stall is caught up in such batches). */
const MAX_BATCH = 400;
const TICK_MS = 50;

/**
 * The chaos run's producer: keyed messages (`payload = {seq}`, per-key sequence numbers) at a
 * steady rate through the library's routed publisher, one batch at a time (so per key the
 * messages are written in sequence order), and it never gives up: Redis restarts, coordinator
 * replicas away and reshards only delay it.
 *
 * It knows every message's shard and entry id from the publish script calls its connection
 * sent ({@link PublishCallLog}): an answered call wrote its messages to its shard with the ids
 * of the reply, whatever routing the publisher used and even if Redis lost them since (a lost
 * write is the run's to count; publishing it again would leave the entry a member handled
 * before the loss without a producer, issue #20). When a call's outcome is unknown (the
 * connection died with it in flight: its Redis client does not re-send unanswered commands, so
 * a write happens at most once per attempt), it looks for the messages at the tail of that
 * call's shard. Only what no call wrote is published again — and what it finds nowhere though its
 * call may have written it (the shard removed by a reshard before the lookup, the write lost in a
 * Redis rollback after a member handled it) is published again too and kept as unsettled, until
 * {@link ChaosProducer.adoptHandledCopies} finds its first copy among the handlings.
 */
export class ChaosProducer {
  readonly produced: ProducedMessage[] = [];
  /** Publish calls that failed (each retried). */
  failures = 0;
  /** Messages whose outcome had to be looked up (their call got no answer). */
  resolved = 0;
  /** Messages an unanswered call may have written where no lookup could see (published again). */
  private readonly unsettled: UnsettledMessage[] = [];
  private readonly seqs = new Map<string, number>();
  /** Publish attempts so far: each message's copy records the attempt that wrote it. */
  private round = 0;
  private readonly redis: Redis;
  private readonly routing: RoutingCache;
  private readonly publisher: StreamPublisher;
  /** The publish script calls of the publish in flight (where each message went). */
  private readonly calls: PublishCallLog;
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
    this.calls = new PublishCallLog(options.stream);
    this.publisher = new StreamPublisher({
      connection: this.calls.watch(this.redis),
      routing: this.routing,
      maxAttempts: 8,
      retryDelayMs: 100,
    });
  }

  /** Messages published so far. */
  get published(): number {
    return this.produced.length;
  }

  /**
   * Adds to `produced` the first copies of unsettled messages that `handled` (every group's
   * handlings) shows: their unanswered call did write them ({@link handledCopies}). Returns how
   * many; call it once publishing stopped, before the run is checked.
   */
  adoptHandledCopies(handled: readonly HandledRecord[]): number {
    const copies = handledCopies(this.unsettled, handled, this.produced);
    this.produced.push(...copies);
    return copies.length;
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
      if ((await this.currentRouting()) === null) {
        await sleep(Math.min(1000, 100 * attempt));
        continue;
      }
      this.calls.clear();
      this.round++;
      let failed = false;
      try {
        await this.publisher.publishBatch(
          this.options.stream,
          pending.map((m) => ({ key: m.key, payload: { seq: m.seq } })),
        );
      } catch (error) {
        failed = true;
        this.failures++;
        const text = error instanceof Error ? error.message : String(error);
        if (text !== this.lastError)
          this.options.log(`producer: publish failed (retrying): ${text}`);
        this.lastError = text;
        // a call without an answer may still be applied: once Redis answers this connection
        // again, every call sent on it before has been (one connection's calls run in order)
        await this.waitForRedis();
      }
      pending = await this.settleUntil(pending);
      if (failed && pending.length > 0) await sleep(Math.min(1000, 50 * attempt));
    }
  }

  /**
   * Records what the publish script calls of the last publish wrote ({@link settlePublished}:
   * the shard and id of each answered call, exactly; an unanswered one looked up at its shard's
   * tail, retried while Redis is away) and returns the rest, to be published again.
   */
  private async settleUntil(pending: readonly Outgoing[]): Promise<Outgoing[]> {
    const calls = [...this.calls.calls()];
    for (let attempt = 1; ; attempt++) {
      try {
        const { written, lookedUp, rest, unsettled } = await settlePublished(
          pending,
          calls,
          (shardKey, count) => this.redis.xrevrange(shardKey, '+', '-', 'COUNT', count),
          this.round,
        );
        for (const w of written) this.record(w.message, w.shard, w.id);
        this.resolved += lookedUp;
        this.unsettled.push(...unsettled);
        return rest;
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

  private record(m: Outgoing, shard: number, id: string): void {
    this.produced.push({ key: m.key, seq: m.seq, shard, id, round: this.round });
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

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
