import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  StreamShardHandler,
  type StreamShardMessage,
  type ReaderClient,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime, MemberRuntimeEvents } from '@redis-stream-coordinator/nestjs/internal';
import { cpuUs, preciseNow } from '../support/stats.js';
import { env, intEnv, ipc } from './worker-ipc.js';

/**
 * The bench member: a Nest application context with the library's module and one no-op
 * `@StreamShardHandler` that counts. Driven over IPC by the bench runner:
 * - `arm`: reset the counters and close the gate (the next handler call waits for `go`, so a
 *   prefill can be drained from a known instant);
 * - `go`: open the gate; `status`: counters, held shards, RSS;
 * - `latency-reset` / `latency-report`: publish → handler-start latencies of payloads carrying `t`;
 * - with `BENCH_TIMELINE=1` it streams `[shard, handledAt, publishedAt]` of every message.
 * Environment: COORDINATOR_URL, COORDINATOR_TOKEN, REDIS_URL, GROUP, BENCH_STREAM, BATCH_SIZE.
 */
const STREAM = process.env.BENCH_STREAM ?? 'bench';
const TIMELINE = process.env.BENCH_TIMELINE === '1';

/** The counting no-op handler. */
@Injectable()
class BenchHandler {
  handled = 0;
  firstAt = 0;
  lastAt = 0;
  waiting = 0;
  latencies: number[] = [];
  recordLatency = false;
  /** Entries whose sequence number `n` was not above the previous one of the same shard. */
  outOfOrder = 0;
  /** The last sequence number per shard (reset on `arm`: every prefill starts at 0). */
  private readonly lastN: number[] = [];
  timeline: Array<[number, number, number]> = [];
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;

  constructor(events: MemberRuntimeEvents) {
    // subscribed at construction: the runtime emits `joining` during the application's bootstrap
    events.onLifecycle((event) => ipc.send({ type: 'lifecycle', event, at: preciseNow() }));
  }

  @StreamShardHandler(STREAM)
  handle(message: StreamShardMessage<{ n?: number; t?: number }>): Promise<void> | undefined {
    if (this.gate !== null) return this.waitGate(message);
    this.count(message);
    return undefined;
  }

  private async waitGate(message: StreamShardMessage<{ n?: number; t?: number }>): Promise<void> {
    this.waiting++;
    await this.gate;
    this.waiting--;
    this.count(message);
  }

  private count(message: StreamShardMessage<{ n?: number; t?: number }>): void {
    const now = preciseNow();
    if (this.handled === 0) this.firstAt = now;
    this.handled++;
    this.lastAt = now;
    // what the raw loop does too: decode the payload, check the shard's order
    const payload = message.payload;
    const n = payload?.n;
    if (typeof n === 'number') {
      if (n <= (this.lastN[message.shard] ?? -1)) this.outOfOrder++;
      this.lastN[message.shard] = n;
    }
    if (!this.recordLatency && !TIMELINE) return;
    const t = payload?.t;
    if (this.recordLatency && typeof t === 'number') this.latencies.push(now - t);
    if (TIMELINE) this.timeline.push([message.shard, now, typeof t === 'number' ? t : 0]);
  }

  arm(): void {
    this.handled = 0;
    this.firstAt = 0;
    this.lastAt = 0;
    this.lastN.length = 0;
    if (this.gate === null) this.gate = new Promise((resolve) => (this.open = resolve));
  }

  resetOrder(): void {
    this.lastN.length = 0;
  }

  go(): void {
    this.gate = null;
    this.open?.();
    this.open = null;
  }
}

@Module({
  imports: [
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: env('COORDINATOR_URL'),
      token: env('COORDINATOR_TOKEN'),
      redis: env('REDIS_URL'),
      group: env('GROUP'),
      handlerDefaults: { batchSize: intEnv('BATCH_SIZE', 100) },
      ...(process.env.MEMBER_ID ? { memberId: process.env.MEMBER_ID } : {}),
      // (a comparison lever: the readers' client other than the default)
      ...(process.env.BENCH_READER_CLIENT
        ? { readerClient: process.env.BENCH_READER_CLIENT as ReaderClient }
        : {}),
    }),
  ],
  providers: [BenchHandler],
})
class BenchMemberModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(BenchMemberModule, {
    logger: ['error', 'warn'],
  });
  app.enableShutdownHooks();
  const handler = app.get(BenchHandler);
  const runtime = app.get(MemberRuntime);
  if (TIMELINE) {
    setInterval(() => {
      if (handler.timeline.length === 0) return;
      ipc.send({ type: 'handled', items: handler.timeline });
      handler.timeline = [];
    }, 20).unref();
  }
  ipc.onCommand((command) => {
    switch (command.type) {
      case 'arm':
        handler.arm();
        ipc.send({ type: 'armed' });
        break;
      case 'go':
        handler.go();
        ipc.send({ type: 'went', at: preciseNow() });
        break;
      case 'status': {
        const s = runtime.status();
        ipc.send({
          type: 'status',
          handled: handler.handled,
          firstAt: handler.firstAt,
          lastAt: handler.lastAt,
          waiting: handler.waiting,
          outOfOrder: handler.outOfOrder,
          memberId: s.memberId,
          phase: s.phase,
          held: s.held.map((h) => h.shard).sort((a, b) => a - b),
          rssKb: Math.round(process.memoryUsage.rss() / 1024),
          cpuUs: cpuUs(),
        });
        break;
      }
      case 'latency-reset':
        handler.latencies = [];
        handler.resetOrder();
        handler.recordLatency = true;
        ipc.send({ type: 'latency-reset' });
        break;
      case 'latency-report':
        handler.recordLatency = false;
        ipc.send({ type: 'latency', samples: handler.latencies });
        handler.latencies = [];
        break;
      default:
        ipc.fail(new Error(`member-app: unknown command ${command.type}`));
    }
  });
  ipc.send({ type: 'ready', pid: process.pid });
}

main().catch((error: unknown) => {
  ipc.fail(error);
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
