import { Controller, Injectable, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { EventPattern, Payload } from '@nestjs/microservices';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import type { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { StreamCoordinatorTransport } from '@redis-stream-coordinator/nestjs/microservices';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { pause, waitFor } from '../../support/wait.js';
import { CollectingLogger, startMemberApp } from './member-app.js';

/** What the app saw, in `performance.now()` time. */
interface Trace {
  openedAt: number;
  joiningAt: number;
  calls: Array<{ seq: number; at: number; open: boolean }>;
}

/**
 * A hybrid Nest app (HTTP + the stream transport) whose database module opens its pool in
 * `onApplicationBootstrap` (slowly), and a controller whose `@EventPattern` handler needs it.
 */
async function createHybrid(coordinatorUrl: string, group: string, trace: Trace) {
  const transport = new StreamCoordinatorTransport({
    coordinatorUrl,
    token: TEST_TOKENS.member,
    redis: redisUrl(),
    group,
    memberId: 'hybrid',
    logger: new CollectingLogger(),
    metrics: false,
  });
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

  @Controller()
  class OrdersController {
    constructor(private readonly db: Database) {}
    @EventPattern<string>('orders')
    handle(@Payload() message: StreamShardMessage<{ seq: number }>): void {
      trace.calls.push({ seq: message.payload.seq, at: performance.now(), open: this.db.open });
      if (!this.db.open) throw new Error('database pool not open yet');
    }
  }

  @Module({ imports: [transport.drainModule(), DatabaseModule], controllers: [OrdersController] })
  class AppModule {}
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), {
    logger: false,
    abortOnError: false,
  });
  app.connectMicroservice({ strategy: transport }, { inheritAppConfig: true });
  const traceJoining = (): void => {
    transport.unwrap<MemberRuntime>().events.onLifecycle((type) => {
      if (type === 'joining' && trace.joiningAt === 0) trace.joiningAt = performance.now();
    });
  };
  return { app, transport, traceJoining };
}

// A hybrid app marks its microservices' hooks as run (connectMicroservice), so the transport's
// listen() in startAllMicroservices() comes before the application's onApplicationBootstrap:
// the member must still start only once every module's onApplicationBootstrap completed.
describe('e2e: a hybrid app starts the transport member after every bootstrap hook', () => {
  const redis = useRedisPrefix('e2e-start-after-bootstrap-hybrid');
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

  const publish = async (group: string): Promise<void> => {
    const publisher = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group,
    });
    for (let seq = 0; seq < 5; seq++)
      await publisher.producer.publish('orders', `k${seq}`, { seq });
    await publisher.app.close();
  };

  it('startAllMicroservices() then listen(): joins only after the pool opened', async () => {
    await publish('hybrid-ready');
    const trace: Trace = { openedAt: 0, joiningAt: 0, calls: [] };
    const { app, transport, traceJoining } = await createHybrid(
      coordinator.url,
      'hybrid-ready',
      trace,
    );
    try {
      await app.startAllMicroservices();
      traceJoining();
      expect(transport.unwrap<MemberRuntime>().status().phase, 'started before bootstrap').toBe(
        'idle',
      );
      await app.listen(0, '127.0.0.1');
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

  it('listen() then startAllMicroservices(): starts once, at once', async () => {
    await publish('hybrid-late');
    const trace: Trace = { openedAt: 0, joiningAt: 0, calls: [] };
    const { app, transport } = await createHybrid(coordinator.url, 'hybrid-late', trace);
    try {
      await app.listen(0, '127.0.0.1');
      expect(trace.openedAt).toBeGreaterThan(0);
      await app.startAllMicroservices();
      expect(transport.unwrap<MemberRuntime>().status().phase).toBe('joining');
      await waitFor(() => trace.calls.length >= 5, {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'the five messages to be handled',
      });
      expect(trace.calls.filter((c) => !c.open)).toEqual([]);
      expect(await members('hybrid-late')).toEqual(['hybrid']);
    } finally {
      await app.close();
    }
  });

  it('a close before the application bootstrapped leaves no member', async () => {
    const trace: Trace = { openedAt: 0, joiningAt: 0, calls: [] };
    const { app, transport, traceJoining } = await createHybrid(
      coordinator.url,
      'hybrid-closed',
      trace,
    );
    await app.startAllMicroservices();
    traceJoining();
    expect(transport.unwrap<MemberRuntime>().status().phase).toBe('idle');
    await app.close();
    expect(transport.unwrap<MemberRuntime>().status().phase).toBe('stopped');
    await pause(500);
    expect(trace.joiningAt).toBe(0);
    expect(await members('hybrid-closed')).toEqual([]);
  });
});
