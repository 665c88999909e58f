import { Injectable, Module, type INestApplicationContext } from '@nestjs/common';
import { connectRedis } from '../../support/redis-client.js';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/redis-processes.js';
import { uniquePrefix } from '../../support/redis.js';
import { waitForNoProblems } from '../../support/wait.js';
import { CollectingLogger } from './member-app.js';

/**
 * Redis loses everything under a running worker and producer (a FLUSHALL): the coordinator
 * restores the stream (docs/operations.md, "Redis lost data"), the worker re-joins and owns its
 * shards again, and the producer publishes again — no restart of anything.
 */
describe('a worker and a producer after Redis lost its data', () => {
  let redis: RestartableRedis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  let app: INestApplicationContext | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    await coordinator?.stop();
    coordinator = undefined;
    client?.disconnect();
    client = undefined;
    await redis?.dispose();
    redis = undefined;
  });

  it('recover by themselves', async () => {
    redis = await startRestartableRedis();
    client = connectRedis(redis.url, { maxRetriesPerRequest: 2 });
    coordinator = await CoordinatorProcess.start({
      prefix: uniquePrefix('wipe-recovery'),
      redisUrl: redis.url,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    const handled: number[] = [];
    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders')
      handle(message: StreamShardMessage<{ seq: number }>): void {
        handled.push(message.payload.seq);
      }
    }
    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: coordinator.url,
          token: TEST_TOKENS.member,
          redis: redis.url,
          group: 'wiped',
          logger: new CollectingLogger(),
          metrics: false,
        }),
      ],
      providers: [OrdersHandler],
    })
    class WorkerModule {}
    app = await NestFactory.createApplicationContext(WorkerModule, { logger: false });
    await app.init();
    const runtime = app.get(MemberRuntime);
    const producer = app.get(StreamProducer);
    const publishAll = async (from: number): Promise<void> => {
      for (let seq = from; seq < from + 10; seq++) {
        await producer.publish('orders', `k${seq}`, { seq });
      }
    };
    const handledAll = (from: number) => (): string[] => {
      const missing = [...Array(10).keys()]
        .map((i) => from + i)
        .filter((s) => !handled.includes(s));
      return missing.length === 0 ? [] : [`not handled: ${missing.join(',')}`];
    };
    await waitForNoProblems(() => (runtime.status().held.length === 2 ? [] : ['joining']), {
      timeoutMs: 15_000,
      message: 'the worker owns both shards',
      retryErrors: true,
    });
    await publishAll(0);
    await waitForNoProblems(handledAll(0), {
      timeoutMs: 15_000,
      message: 'the first batch is handled',
      retryErrors: true,
    });

    await client.flushall();
    // The producer retries until the coordinator restored the stream (STREAM_NOT_FOUND until then).
    await waitForNoProblems(
      async () => {
        try {
          await publishAll(100);
          return [];
        } catch (error) {
          return [String(error)];
        }
      },
      {
        timeoutMs: 20_000,
        message: 'the producer publishes again',
        intervalMs: 200,
        retryErrors: true,
      },
    );
    await waitForNoProblems(handledAll(100), {
      timeoutMs: 20_000,
      message: 'the batch published after the loss is handled',
      intervalMs: 100,
      retryErrors: true,
    });
    expect(runtime.status().held).toHaveLength(2);
    const routing = await new CoordinatorApi(coordinator.url).get<{ routingEpoch: number }>(
      '/v1/streams/orders',
    );
    expect(routing.body.routingEpoch).toBe(2);
  });
});
