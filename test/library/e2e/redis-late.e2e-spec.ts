import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import {
  StreamCoordinatorHealthIndicator,
  StreamCoordinatorHealthModule,
} from '@redis-stream-coordinator/nestjs/health';
import type { INestApplicationContext } from '@nestjs/common';
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorProcess, TEST_TOKENS } from '../../support/coordinator-process.js';
import { freePort } from '../../support/free-port.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/redis-processes.js';
import { uniquePrefix } from '../../support/redis.js';
import { waitForNoProblems } from '../../support/wait.js';
import { CollectingLogger } from './member-app.js';

/**
 * Start order with a late Redis (a Kubernetes rollout): the coordinator and a worker both start
 * while Redis does not answer. Neither exits; the worker's health says why it is not ready; once
 * Redis answers, the coordinator finishes its start-up, the worker joins, gets its shards and
 * handles what is published — no restart of either.
 */
describe('Redis late for the coordinator and a worker', () => {
  let redis: RestartableRedis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  let app: INestApplicationContext | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await coordinator?.stop();
    coordinator = undefined;
    await redis?.dispose();
    redis = undefined;
  });

  it('both keep trying, the worker reports not ready with the reason, then both work', async () => {
    redis = await startRestartableRedis();
    await redis.stop();
    const port = await freePort();
    const starting = CoordinatorProcess.start({
      prefix: uniquePrefix('redis-late'),
      redisUrl: redis.url,
      port,
      readyTimeoutMs: 90_000,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    let exited: unknown;
    starting.catch((error: unknown) => {
      exited = error;
    });

    const handled: number[] = [];
    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders')
      handle(message: StreamShardMessage<{ seq: number }>): void {
        handled.push(message.payload.seq);
      }
    }
    const logger = new CollectingLogger();
    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: `http://127.0.0.1:${port}`,
          token: TEST_TOKENS.member,
          redis: redis.url,
          group: 'late',
          logger,
          metrics: false,
        }),
        StreamCoordinatorHealthModule.forRoot(),
      ],
      providers: [OrdersHandler],
    })
    class WorkerModule {}
    // The worker's start does not wait for Redis (nor for the coordinator): init resolves.
    app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
    await app.init();
    const health = app.get(StreamCoordinatorHealthIndicator);
    const runtime = app.get(MemberRuntime);

    await waitForNoProblems(
      async () => {
        const problems: string[] = [];
        const r = (await health.redis('redis')).redis as { status: string; reason?: string };
        if (r.status !== 'down' || !r.reason) problems.push(`redis ${JSON.stringify(r)}`);
        const c = health.coordinator('coordinator').coordinator as {
          status: string;
          reason?: string;
        };
        if (c.status !== 'down' || !c.reason) problems.push(`coordinator ${JSON.stringify(c)}`);
        return problems;
      },
      {
        timeoutMs: 20_000,
        message: 'the worker reports Redis and the coordinator down, with reasons',
        intervalMs: 200,
        retryErrors: true,
      },
    );
    // Still down and still trying a while later (past several retry steps): nothing exited.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    expect(exited).toBeUndefined();
    expect(runtime.status().phase).not.toBe('stopped');

    await redis.restart();
    coordinator = await starting;
    await waitForNoProblems(
      async () => {
        const problems: string[] = [];
        const held = runtime.status().held.length;
        if (held !== 2) problems.push(`${held} shards held`);
        const r = (await health.redis('redis')).redis as { status: string };
        if (r.status !== 'up') problems.push(`redis ${JSON.stringify(r)}`);
        return problems;
      },
      {
        timeoutMs: 30_000,
        message: 'the worker joined and owns both shards, Redis up',
        intervalMs: 200,
        retryErrors: true,
      },
    );
    const producer = app.get(StreamProducer);
    for (let seq = 0; seq < 10; seq++) await producer.publish('orders', `k${seq}`, { seq });
    await waitForNoProblems(() => (handled.length >= 10 ? [] : [`${handled.length} handled`]), {
      timeoutMs: 15_000,
      message: 'every message handled',
      retryErrors: true,
    });
    expect([...new Set(handled)].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
