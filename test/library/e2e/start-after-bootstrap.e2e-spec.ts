import { Injectable, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { MemberRuntimeEvents } from '@redis-stream-coordinator/nestjs/internal';
import {
  StreamCoordinatorModule,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { pause, waitFor } from '../../support/wait.js';
import { CollectingLogger, startMemberApp } from './member-app.js';

/** What the app saw, in `performance.now()` time. */
interface Trace {
  openedAt: number;
  joiningAt: number;
  calls: Array<{ seq: number; at: number; open: boolean }>;
}

/**
 * A Nest app whose database module opens its pool in `onApplicationBootstrap` (slowly), and a
 * feature module whose handler needs that pool. The library's module is global, so Nest runs its
 * hooks before the user's modules'.
 */
async function startApp(coordinatorUrl: string, redis: string, group: string, trace: Trace) {
  @Injectable()
  class Database implements OnApplicationBootstrap {
    open = false;
    async onApplicationBootstrap(): Promise<void> {
      await new Promise((r) => setTimeout(r, 1500));
      this.open = true;
      trace.openedAt = performance.now();
    }
  }
  @Module({ providers: [Database], exports: [Database] })
  class DatabaseModule {}

  @Injectable()
  class OrdersHandler {
    constructor(private readonly db: Database) {}
    @StreamShardHandler('orders')
    handle(message: StreamShardMessage<{ seq: number }>): void {
      trace.calls.push({ seq: message.payload.seq, at: performance.now(), open: this.db.open });
      if (!this.db.open) throw new Error('database pool not open yet');
    }
  }
  @Module({ imports: [DatabaseModule], providers: [OrdersHandler] })
  class OrdersModule {}

  @Module({
    imports: [
      StreamCoordinatorModule.forRoot({
        coordinatorUrl,
        token: TEST_TOKENS.member,
        redis,
        group,
        memberId: 'starter',
        logger: new CollectingLogger(),
        metrics: false,
      }),
      OrdersModule,
    ],
  })
  class AppModule {}
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    logger: false,
    abortOnError: false,
  });
  app.get(MemberRuntimeEvents).onLifecycle((type) => {
    if (type === 'joining' && trace.joiningAt === 0) trace.joiningAt = performance.now();
  });
  await app.listen(0, '127.0.0.1');
  return app;
}

// Issue 17 part 4 item 1: consumption starts once the application is ready — after every
// module's onApplicationBootstrap — and a close before the start completed leaves nothing running.
describe('e2e: the member starts after every bootstrap hook', () => {
  const redis = useRedisPrefix('e2e-start-after-bootstrap');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:1', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  const members = async (group: string): Promise<string[]> => {
    const res = await api.get<DescribedGroup>(`/v1/groups/${group}`);
    return res.status === 200 ? res.body.members.map((m) => m.memberId) : [];
  };

  it('joins only after another module opened its pool; the first handler call finds it open', async () => {
    const publisher = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group: 'ready',
    });
    for (let seq = 0; seq < 5; seq++)
      await publisher.producer.publish('orders', `k${seq}`, { seq });
    await publisher.app.close();

    const trace: Trace = { openedAt: 0, joiningAt: 0, calls: [] };
    const app = await startApp(coordinator.url, redisUrl(), 'ready', trace);
    try {
      await waitFor(() => trace.calls.length >= 5, {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'the five messages to be handled',
      });
      expect(trace.openedAt).toBeGreaterThan(0);
      expect(trace.joiningAt, 'joined before the pool was open').toBeGreaterThan(trace.openedAt);
      expect(trace.calls.filter((c) => !c.open)).toEqual([]);
      expect(trace.calls.map((c) => c.seq)).toEqual([0, 1, 2, 3, 4]);
    } finally {
      await app.close();
    }
  });

  it('a close while the start waits on the coordinator leaves no member, timer or connection', async () => {
    const redisProxy = await TcpProxy.start(
      Number(new URL(redisUrl()).port || 6379),
      new URL(redisUrl()).hostname,
    );
    // the coordinator behind a proxy held paused: the member-id request hangs until resumed
    const port = Number(new URL(coordinator.url).port);
    const coordinatorProxy = await TcpProxy.start(port, '127.0.0.1');
    coordinatorProxy.pause();
    try {
      const app = await startMemberApp({
        coordinatorUrl: `http://127.0.0.1:${coordinatorProxy.port}`,
        redis: redisProxy.url,
        group: 'early-close',
        memberId: 'coordinator',
        handle: async () => undefined,
        module: { requestTimeoutMs: 5000 },
      });
      expect(app.runtime.status().phase).toBe('joining');
      await app.app.close();
      expect(app.runtime.status().phase).toBe('stopped');
      // the coordinator answers the request sent before close: the start must not go on
      coordinatorProxy.resume();
      await pause(1500);
      expect(app.runtime.status()).toMatchObject({ phase: 'stopped', memberId: null });
      expect(await members('early-close')).toEqual([]);
      expect(redisProxy.connections).toBe(0);
    } finally {
      await coordinatorProxy.close();
      await redisProxy.close();
    }
  });
});
