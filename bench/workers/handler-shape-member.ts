import 'reflect-metadata';
import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Module, type OnApplicationShutdown, type Provider } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import {
  ShardMessage,
  StreamCoordinatorModule,
  StreamShardHandler,
  type StreamShardHandlerOptions,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import {
  ExactlyOnce,
  PgTransaction,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import pg from 'pg';
import { cpuUs, preciseNow } from '../support/stats.js';
import { env, intEnv, ipc } from './worker-ipc.js';

/**
 * The member of the `handlers` scenario: one `@StreamShardHandler` whose shape comes from the
 * environment, driven over IPC like `member-app` (`arm` closes a gate the next handler calls wait
 * at, `go` opens it, `status` reports counters, held shards and CPU time).
 * - HANDLER_MODE: `message` (one message per call) or `batch` (`batch: { maxSize: BATCH_MAX }`);
 * - WORK: `sleep` (awaits WORK_MS per call: per message, or once per batch — one bulk write),
 *   `payload` (reads every message's payload, nothing else), `pg-insert` (one autocommit INSERT
 *   of an effect row per message through a `pg` Pool of 8) or `pg-exactly-once` (the same INSERT
 *   through `@ExactlyOnce()` + `@PgTransaction()`, `PostgresExactlyOnceModule` with a pool of 8);
 *   both `pg-*` need BENCH_PG_URL (its search path the run's schema, the tables created) and a
 *   per-message handler;
 * - HANDLER_OPTIONS: JSON merged into the decorator's options (e.g. `{"batchSize":100}`, or the
 *   ordering/concurrency options of a later scenario entry).
 * Environment too: COORDINATOR_URL, COORDINATOR_TOKEN, REDIS_URL, GROUP, BENCH_STREAM.
 */
const STREAM = env('BENCH_STREAM');
const MODE = process.env.HANDLER_MODE === 'batch' ? 'batch' : 'message';
const WORKS = ['sleep', 'payload', 'pg-insert', 'pg-exactly-once'] as const;
const WORK = (WORKS as readonly string[]).includes(process.env.WORK ?? '')
  ? (process.env.WORK as (typeof WORKS)[number])
  : 'payload';
const PG_POOL_SIZE = 8;
/** The effect row each message writes (the table is created by the scenario). */
const EFFECT_INSERT = 'INSERT INTO effects (shard, entry_id, payload) VALUES ($1, $2, $3)';
const WORK_MS = intEnv('WORK_MS', 10);
const BATCH_MAX = intEnv('BATCH_MAX', 100);
const EXTRA = JSON.parse(process.env.HANDLER_OPTIONS ?? '{}') as StreamShardHandlerOptions;
const OPTIONS: StreamShardHandlerOptions = {
  ...EXTRA,
  ...(MODE === 'batch' ? { batch: { maxSize: BATCH_MAX } } : {}),
};

type Message = StreamShardMessage<{ n?: number }>;

/** Gate and counters shared by whichever handler the member runs. */
@Injectable()
class ShapeState {
  handled = 0;
  calls = 0;
  /**
   * ms from `go` to the last handler call so far, on this process's monotonic clock (the
   * runner's wall clock and this one's need not agree: on this VM they drifted apart by seconds
   * within a long bench run).
   */
  elapsedMs = 0;
  waiting = 0;
  private goAt = 0;
  /** Messages handled before an earlier-published message of their key (must stay 0). */
  orderViolations = 0;
  private readonly lastByKey = new Map<string, number>();
  private gate: Promise<void> | null = null;
  private open: (() => void) | null = null;

  async atGate(): Promise<void> {
    if (this.gate === null) return;
    this.waiting++;
    await this.gate;
    this.waiting--;
  }

  handledAll(messages: readonly Message[]): void {
    for (const message of messages) {
      const n = message.payload?.n;
      if (n === undefined) continue;
      const last = this.lastByKey.get(message.key);
      if (last !== undefined && n <= last) this.orderViolations++;
      this.lastByKey.set(message.key, n);
    }
    this.handled += messages.length;
    this.calls++;
    this.elapsedMs = performance.now() - this.goAt;
  }

  arm(): void {
    this.handled = 0;
    this.calls = 0;
    this.orderViolations = 0;
    this.lastByKey.clear(); // each run publishes n from 0 again
    if (this.gate === null) this.gate = new Promise((resolve) => (this.open = resolve));
  }

  go(): void {
    this.goAt = performance.now();
    this.gate = null;
    this.open?.();
    this.open = null;
  }
}

@Injectable()
class ShapeHandler {
  sink = 0;
  constructor(private readonly state: ShapeState) {}

  @StreamShardHandler(STREAM, OPTIONS)
  async handle(input: Message | readonly Message[]): Promise<void> {
    const messages = Array.isArray(input) ? (input as readonly Message[]) : [input as Message];
    await this.state.atGate();
    if (WORK === 'sleep') {
      // per message for a message handler, once per call for a batch handler (a bulk write)
      await sleep(WORK_MS);
    } else {
      for (const message of messages) if (message.payload !== undefined) this.sink++;
    }
    this.state.handledAll(messages);
  }
}

/** The plain baseline: one autocommit INSERT per message through the application's pool. */
@Injectable()
class PlainInsertHandler implements OnApplicationShutdown {
  private readonly pool = new pg.Pool({ connectionString: env('BENCH_PG_URL'), max: PG_POOL_SIZE });
  constructor(private readonly state: ShapeState) {}

  /** After the members drained (their drain is the application's first teardown hook). */
  async onApplicationShutdown(): Promise<void> {
    await this.pool.end();
  }

  @StreamShardHandler(STREAM, OPTIONS)
  async handle(message: Message): Promise<void> {
    await this.state.atGate();
    await this.pool.query(EFFECT_INSERT, [
      message.shard,
      message.id,
      JSON.stringify(message.payload),
    ]);
    this.state.handledAll([message]);
  }
}

/** The same INSERT, exactly once: inside the library's transaction with the offset row. */
@Injectable()
class ExactlyOnceInsertHandler {
  constructor(private readonly state: ShapeState) {}

  @StreamShardHandler(STREAM, OPTIONS)
  @ExactlyOnce()
  async handle(
    @ShardMessage() message: Message,
    @PgTransaction() tx: pg.PoolClient,
  ): Promise<void> {
    await this.state.atGate();
    await tx.query(EFFECT_INSERT, [message.shard, message.id, JSON.stringify(message.payload)]);
    this.state.handledAll([message]);
  }
}

const HANDLER: Provider =
  WORK === 'pg-insert'
    ? PlainInsertHandler
    : WORK === 'pg-exactly-once'
      ? ExactlyOnceInsertHandler
      : ShapeHandler;

@Module({
  imports: [
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: env('COORDINATOR_URL'),
      token: env('COORDINATOR_TOKEN'),
      redis: env('REDIS_URL'),
      group: env('GROUP'),
      metrics: false,
    }),
    ...(WORK === 'pg-exactly-once'
      ? [
          PostgresExactlyOnceModule.forRoot({
            connectionString: env('BENCH_PG_URL'),
            maxConnections: PG_POOL_SIZE,
          }),
        ]
      : []),
  ],
  providers: [ShapeState, HANDLER],
})
class ShapeMemberModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(ShapeMemberModule, {
    logger: ['error', 'warn'],
  });
  app.enableShutdownHooks();
  const handler = app.get(ShapeState);
  const runtime = app.get(MemberRuntime);
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
      case 'status':
        ipc.send({
          type: 'status',
          handled: handler.handled,
          calls: handler.calls,
          orderViolations: handler.orderViolations,
          elapsedMs: handler.elapsedMs,
          waiting: handler.waiting,
          held: runtime.status().held.map((h) => h.shard),
          cpuUs: cpuUs(),
        });
        break;
      default:
        ipc.fail(new Error(`handler-shape-member: unknown command ${command.type}`));
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
