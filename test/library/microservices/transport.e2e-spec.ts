import {
  Catch,
  Controller,
  type INestMicroservice,
  UseFilters,
  Module,
  UseInterceptors,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
  type RpcExceptionFilter,
  ValidationPipe,
} from '@nestjs/common';
import { Type } from 'class-transformer';
import { IsInt, IsString, Min, ValidateNested } from 'class-validator';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, MessagePattern, Payload, RpcException } from '@nestjs/microservices';
import type { StreamShardContext, StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import {
  StreamCoordinatorClientProxy,
  StreamCoordinatorTransport,
} from '@redis-stream-coordinator/nestjs/microservices';
import { EMPTY, lastValueFrom, type Observable, tap, throwError } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { CollectingLogger } from '../e2e/member-app.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

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
      env: { STREAMS: 'events:3,failing:1,filtered:1,swallowed:1,validated:1' },
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
      await waitFor(() => handled.length >= 30, {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: '30 events',
      });
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

  /** The dead-letter entries of a stream, fields by name. */
  const deadLetters = async (stream: string): Promise<Array<Record<string, string>>> => {
    const routing = (
      await new CoordinatorApi(coordinator.url).get<StreamRouting>(`/v1/streams/${stream}`)
    ).body;
    return (await redis.redis().xrange(routing.deadLetterKey, '-', '+')).map(([, fields]) => {
      const entry: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
      return entry;
    });
  };

  it('dead-letters with the real error, logged once: an RpcException, and any error a pass-through filter hands back', async () => {
    @Catch()
    class PassThroughFilter implements RpcExceptionFilter {
      catch(exception: unknown): Observable<never> {
        return throwError(() => exception);
      }
    }
    @Controller()
    class FailingController {
      @EventPattern<string>('failing')
      refuse(@Payload() message: StreamShardMessage): void {
        throw new RpcException(`customer ${message.key} is unknown`);
      }

      @EventPattern<string>('filtered')
      @UseFilters(PassThroughFilter)
      fail(@Payload() message: StreamShardMessage): void {
        throw new TypeError(`cannot read order ${message.key}`);
      }
    }
    @Module({ controllers: [FailingController] })
    class FailingModule {}

    const logger = new CollectingLogger();
    const app = await NestFactory.createMicroservice(FailingModule, {
      strategy: new StreamCoordinatorTransport({
        ...options(),
        group: 'ms-failing',
        logger,
        handlerDefaults: { maxDeliveries: 2, retry: { initialDelayMs: 10, maxDelayMs: 10 } },
      }),
      logger,
    });
    await app.listen();
    const client = new StreamCoordinatorClientProxy(options());
    try {
      await client.connect();
      await lastValueFrom(client.emit('failing', { key: 'c-7', value: {} }));
      await lastValueFrom(client.emit('filtered', { key: 'o-9', value: {} }));
      await waitFor(() => logger.lines.some((l) => l.message.includes('dead-lettered')), {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'a dead letter',
      });
      await waitFor(
        () => logger.lines.filter((l) => l.message.includes('dead-lettered')).length === 2,
        { timeoutMs: 15_000, intervalMs: 20, message: 'two dead letters' },
      );
      const [refused] = await deadLetters('failing');
      expect(refused).toMatchObject({ reason: 'max-deliveries', error: 'customer c-7 is unknown' });
      const [failed] = await deadLetters('filtered');
      expect(failed).toMatchObject({ reason: 'max-deliveries', error: 'cannot read order o-9' });
      expect(failed?.stack).toMatch(
        /^TypeError: cannot read order o-9\n\s+at FailingController\.fail/,
      );
      // each failed delivery is logged once, by the library (Nest does not log it again)
      const mentions = logger.lines.filter((l) => l.message.includes('customer c-7 is unknown'));
      expect(mentions.filter((l) => l.message.includes('handler failed'))).toHaveLength(2);
      expect(mentions.filter((l) => !l.message.includes('handler failed'))).toHaveLength(1);
      expect(mentions.find((l) => !l.message.includes('handler failed'))?.message).toContain(
        'dead-lettered',
      );
    } finally {
      await client.close();
      await app.close();
    }
  });

  it('ValidationPipe on @Payload() validates and transforms the decoded payload; a bad one is dead-lettered', async () => {
    class Order {
      @IsString()
      orderId!: string;

      @IsInt()
      @Min(1)
      total!: number;
    }
    class OrderEvent {
      @IsString()
      key!: string;

      @ValidateNested()
      @Type(() => Order)
      payload!: Order;
    }
    const handled: unknown[] = [];
    @Controller()
    class ValidatedController {
      @EventPattern<string>('validated')
      handle(
        @Payload(new ValidationPipe({ expectedType: OrderEvent, transform: true }))
        event: OrderEvent,
      ): void {
        handled.push(event);
      }
    }
    @Module({ controllers: [ValidatedController] })
    class ValidatedModule {}

    const logger = new CollectingLogger();
    const app = await NestFactory.createMicroservice(ValidatedModule, {
      strategy: new StreamCoordinatorTransport({
        ...options(),
        group: 'ms-validated',
        logger,
        handlerDefaults: { maxDeliveries: 1 },
      }),
      logger,
    });
    await app.listen();
    const client = new StreamCoordinatorClientProxy(options());
    try {
      await client.connect();
      await lastValueFrom(
        client.emit('validated', { key: 'c-1', value: { orderId: 'o-1', total: 2 } }),
      );
      await lastValueFrom(
        client.emit('validated', { key: 'c-1', value: { orderId: 'o-2', total: 0 } }),
      );
      await waitFor(async () => (await deadLetters('validated')).length === 1, {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'the invalid event dead-lettered',
      });
      expect(handled).toHaveLength(1);
      expect(handled[0]).toBeInstanceOf(OrderEvent);
      expect((handled[0] as OrderEvent).payload).toBeInstanceOf(Order);
      expect(handled[0]).toMatchObject({ key: 'c-1', payload: { orderId: 'o-1', total: 2 } });
      const [refused] = await deadLetters('validated');
      // (Nest's RPC exception filter replaces the BadRequestException's text: see the error)
      expect(refused).toMatchObject({ reason: 'max-deliveries', key: 'c-1' });
      expect(refused?.payload).toBe(JSON.stringify({ orderId: 'o-2', total: 0 }));
    } finally {
      await client.close();
      await app.close();
    }
  });

  it('a filter that swallows a failure with an empty Observable (EMPTY) does not ack it', async () => {
    @Catch()
    class EmptyFilter implements RpcExceptionFilter {
      catch(): Observable<never> {
        return EMPTY;
      }
    }
    let calls = 0;
    @Controller()
    class SwallowingController {
      @EventPattern<string>('swallowed')
      @UseFilters(EmptyFilter)
      fail(@Payload() message: StreamShardMessage): void {
        calls++;
        throw new TypeError(`cannot read order ${message.key}`);
      }
    }
    @Module({ controllers: [SwallowingController] })
    class SwallowingModule {}

    const logger = new CollectingLogger();
    const app = await NestFactory.createMicroservice(SwallowingModule, {
      strategy: new StreamCoordinatorTransport({
        ...options(),
        group: 'ms-swallowed',
        logger,
        handlerDefaults: { maxDeliveries: 2, retry: { initialDelayMs: 10, maxDelayMs: 10 } },
      }),
      logger,
    });
    await app.listen();
    const client = new StreamCoordinatorClientProxy(options());
    try {
      await client.connect();
      await lastValueFrom(client.emit('swallowed', { key: 's-1', value: {} }));
      // The failure's own message says "retried, then dead-lettered": wait for the dead letter's log.
      await waitFor(() => logger.lines.some((l) => l.message.includes('dead-lettered to')), {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'a dead letter',
      });
      const [letter] = await deadLetters('swallowed');
      expect(letter).toMatchObject({ reason: 'max-deliveries', deliveryCount: '2' });
      expect(letter?.error).toContain('completed without a value');
      expect(calls).toBe(2);
    } finally {
      await client.close();
      await app.close();
    }
  });
});
