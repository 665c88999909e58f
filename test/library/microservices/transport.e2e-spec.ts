import {
  Controller,
  type INestMicroservice,
  Module,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import type { StreamShardContext, StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import {
  StreamCoordinatorClientProxy,
  StreamCoordinatorTransport,
} from '@redis-stream-coordinator/nestjs/microservices';
import { lastValueFrom, type Observable, tap } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorProcess, TEST_TOKENS } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('@nestjs/microservices transport and ClientProxy', () => {
  const redis = useRedisPrefix('ms-transport');
  let coordinator: CoordinatorProcess;
  const options = () => ({
    coordinatorUrl: coordinator.url,
    token: TEST_TOKENS.member,
    redis: redisUrl(),
    group: 'ms',
  });

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'events:3' },
    });
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('routes ClientProxy.emit like the producer and runs @EventPattern handlers through interceptors', async () => {
    const handled: Array<{ key: string; n: number; shard: number; viaInterceptor: boolean }> = [];
    let intercepted = 0;

    class CountingInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
        intercepted++;
        expect(context.getType()).toBe('rpc');
        return next.handle().pipe(tap(() => undefined));
      }
    }

    @Controller()
    class EventsController {
      // The explicit type argument picks the untyped overload, so @Ctx() can be typed.
      @EventPattern<string>('events')
      @UseInterceptors(CountingInterceptor)
      handle(
        @Payload() message: StreamShardMessage<{ n: number }>,
        @Ctx() context: StreamShardContext,
      ): void {
        handled.push({
          key: message.key,
          n: message.payload.n,
          shard: context.shard,
          viaInterceptor: intercepted > 0,
        });
      }
    }

    @Module({ controllers: [EventsController] })
    class AppModule {}

    const app: INestMicroservice = await NestFactory.createMicroservice(AppModule, {
      strategy: new StreamCoordinatorTransport(options()),
      logger: false,
    });
    await app.listen();
    const client = new StreamCoordinatorClientProxy(options());
    try {
      await client.connect();
      for (let n = 0; n < 30; n++) {
        const id = await lastValueFrom(client.emit('events', { key: `k${n % 5}`, value: { n } }));
        expect(typeof id).toBe('string');
      }
      await waitFor(() => handled.length >= 30, 15_000, '30 events');
      expect(intercepted).toBeGreaterThanOrEqual(30);
      for (let k = 0; k < 5; k++) {
        const ns = handled.filter((h) => h.key === `k${k}`).map((h) => h.n);
        expect(ns).toEqual(ns.slice().sort((a, b) => a - b));
      }
      await expect(lastValueFrom(client.send('events', { key: 'x', value: 1 }))).rejects.toThrow(
        /not supported/,
      );
    } finally {
      await client.close();
      await app.close();
    }
  });

  it('refuses @MessagePattern handlers with a clear error', async () => {
    @Controller()
    class RpcController {
      @MessagePattern('events')
      reply(): string {
        return 'no';
      }
    }
    @Module({ controllers: [RpcController] })
    class RpcModule {}
    const app = await NestFactory.createMicroservice(RpcModule, {
      strategy: new StreamCoordinatorTransport(options()),
      logger: false,
      abortOnError: false,
    });
    await expect(app.listen()).rejects.toThrow(/@MessagePattern/);
    await app.close();
  });
});
