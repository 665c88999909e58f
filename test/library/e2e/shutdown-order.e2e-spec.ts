import { Injectable, Module, type OnModuleDestroy } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardContext,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { CollectingLogger } from './member-app.js';
import { waitFor } from '../../support/wait.js';

/** What one app saw: handler calls and when the user's own teardown began. */
interface Trace {
  readonly calls: Array<{ seq: number; t0: number; t1: number; ok: boolean; error?: string }>;
  /** `performance.now()` when the first user `onModuleDestroy` started (root module's provider). */
  firstDestroyAt: number;
  /** `performance.now()` when the database provider closed its pool. */
  dbClosedAt: number;
}

/**
 * A Nest app as its users write it: a database module whose provider closes its pool in
 * `onModuleDestroy` (the pattern of Nest's docs), a feature module whose handler uses it, and a
 * root module with a provider of its own that has an `onModuleDestroy` too.
 */
async function startApp(coordinatorUrl: string, group: string, memberId: string, trace: Trace) {
  @Injectable()
  class Database implements OnModuleDestroy {
    private open = true;
    async query(seq: number): Promise<number> {
      if (!this.open) throw new Error('database pool closed');
      await new Promise((r) => setTimeout(r, 150));
      if (!this.open) throw new Error('database pool closed mid-query');
      return seq;
    }
    onModuleDestroy(): void {
      this.open = false;
      trace.dbClosedAt = performance.now();
    }
  }
  @Module({ providers: [Database], exports: [Database] })
  class DatabaseModule {}

  @Injectable()
  class OrdersHandler {
    constructor(private readonly db: Database) {}
    @StreamShardHandler('orders', {
      maxDeliveries: 2,
      retry: { initialDelayMs: 10, maxDelayMs: 10 },
    })
    async handle(message: StreamShardMessage<{ seq: number }>, _ctx: StreamShardContext) {
      const t0 = performance.now();
      try {
        await this.db.query(message.payload.seq);
        trace.calls.push({ seq: message.payload.seq, t0, t1: performance.now(), ok: true });
      } catch (error) {
        trace.calls.push({
          seq: message.payload.seq,
          t0,
          t1: performance.now(),
          ok: false,
          error: String(error),
        });
        throw error;
      }
    }
  }
  @Module({ imports: [DatabaseModule], providers: [OrdersHandler] })
  class OrdersModule {}

  @Injectable()
  class AppLifecycle implements OnModuleDestroy {
    onModuleDestroy(): void {
      if (trace.firstDestroyAt === 0) trace.firstDestroyAt = performance.now();
    }
  }
  @Module({
    imports: [
      StreamCoordinatorModule.forRoot({
        coordinatorUrl,
        token: TEST_TOKENS.member,
        redis: redisUrl(),
        group,
        memberId,
        logger: new CollectingLogger(),
        metrics: false,
        shutdownTimeoutMs: 10_000,
      }),
      OrdersModule,
    ],
    providers: [AppLifecycle],
  })
  class AppModule {}
  return NestFactory.createApplicationContext(AppModule, { logger: false });
}

// Issue 15 item 2: the library's module is global, and Nest tears modules down in ascending
// distance from the root — globals last. The member must drain before any user provider's
// onModuleDestroy, or handlers run against closed resources and messages are dead-lettered.
describe('e2e: shutdown drains before the application tears its own providers down', () => {
  const redis = useRedisPrefix('e2e-shutdown-order');
  let coordinator: CoordinatorProcess;
  let routing: StreamRouting;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    routing = (await new CoordinatorApi(coordinator.url).get<StreamRouting>('/v1/streams/orders'))
      .body;
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('no handler starts once user teardown began, none sees a closed pool, nothing dead-lettered or lost', async () => {
    const first: Trace = { calls: [], firstDestroyAt: 0, dbClosedAt: 0 };
    const app = await startApp(coordinator.url, 'order', 'first', first);
    const producer = app.get(StreamProducer);
    const total = 40;
    for (let seq = 0; seq < total; seq++) await producer.publish('orders', `k${seq % 8}`, { seq });
    // mid-load: handlers are running on both shards
    await waitFor(() => first.calls.length >= 4, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the first handlers to finish',
    });
    await app.close();

    expect(first.firstDestroyAt).toBeGreaterThan(0);
    const afterTeardown = first.calls.filter((c) => c.t0 >= first.firstDestroyAt);
    expect(afterTeardown, 'handler calls started after the first user onModuleDestroy').toEqual([]);
    const running = first.calls.filter((c) => c.t1 > first.firstDestroyAt);
    expect(running, 'handler calls still running when user teardown began').toEqual([]);
    expect(first.calls.filter((c) => !c.ok)).toEqual([]);
    const deadKey = routing.deadLetterKey;
    expect(await redis.redis().xlen(deadKey)).toBe(0);

    // nothing lost: a second member handles the rest
    const second: Trace = { calls: [], firstDestroyAt: 0, dbClosedAt: 0 };
    const next = await startApp(coordinator.url, 'order', 'second', second);
    try {
      const seen = () =>
        new Set([...first.calls, ...second.calls].filter((c) => c.ok).map((c) => c.seq));
      await waitFor(() => seen().size === total, {
        timeoutMs: 20_000,
        intervalMs: 20,
        message: () => `all ${total} (seen ${seen().size})`,
      });
    } finally {
      await next.close();
    }
    expect(second.calls.filter((c) => !c.ok)).toEqual([]);
    expect(await redis.redis().xlen(deadKey)).toBe(0);
  });
});
