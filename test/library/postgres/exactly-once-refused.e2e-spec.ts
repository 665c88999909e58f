import {
  Controller,
  Get,
  Injectable,
  Module,
  type ModuleMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  StreamCoordinatorError,
  type StreamShardContext,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { StreamCoordinatorTransport } from '@redis-stream-coordinator/nestjs/microservices';
import {
  ExactlyOnce,
  ExactlyOnceInterceptor,
  ExactlyOnceUnsupportedHandlerError,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';
import { redisUrl } from '../../support/redis.js';

// `@ExactlyOnce()` works only where the library calls the handler itself (`@StreamShardHandler`).
// Elsewhere the interceptor has no stream entry to record, so before this check every message of
// an `@EventPattern` handler failed at run time and was retried, then dead-lettered, with the
// offsets table never consulted. It is refused at bootstrap instead, naming the method.
describe('e2e: @ExactlyOnce() outside @StreamShardHandler is refused at bootstrap', () => {
  let db: TestSchema;

  beforeAll(async () => {
    db = await createTestSchema('eo_refused');
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** A transport that is never reached: the bootstrap fails before it listens. */
  const transport = () =>
    new StreamCoordinatorTransport({
      coordinatorUrl: 'http://127.0.0.1:1',
      token: 'unused',
      redis: redisUrl(),
      group: 'eo-refused',
      logger: false,
    });

  it('@ExactlyOnce() on an @EventPattern handler of the microservice transport', async () => {
    @Controller()
    class OrdersEvents {
      @EventPattern<string>('orders')
      @ExactlyOnce()
      handle(@Payload() _message: StreamShardMessage, @Ctx() _context: StreamShardContext): void {}
    }
    @Module({
      imports: [PostgresExactlyOnceModule.forRoot({ connectionString: db.url })],
      controllers: [OrdersEvents],
    })
    class AppModule {}
    const app = await NestFactory.createMicroservice(AppModule, {
      strategy: transport(),
      logger: false,
      abortOnError: false,
    });
    try {
      const failure = await app.listen().then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(ExactlyOnceUnsupportedHandlerError);
      expect(failure).toBeInstanceOf(StreamCoordinatorError);
      expect((failure as Error).message).toMatch(
        /OrdersEvents\.handle has @ExactlyOnce\(\) but is not a @StreamShardHandler method.*@EventPattern.*use @StreamShardHandler/,
      );
    } finally {
      await app.close();
    }
  });

  it('ExactlyOnceInterceptor on a controller class with an @EventPattern handler', async () => {
    @Controller()
    @UseInterceptors(ExactlyOnceInterceptor)
    class OrdersEvents {
      @EventPattern<string>('orders')
      handle(@Payload() _message: StreamShardMessage): void {}

      /** Not a handler (no decorator): the class's interceptor never runs for it. */
      helper(): number {
        return 1;
      }
    }
    @Module({
      imports: [PostgresExactlyOnceModule.forRoot({ connectionString: db.url })],
      controllers: [OrdersEvents],
    })
    class AppModule {}
    const app = await NestFactory.createMicroservice(AppModule, {
      strategy: transport(),
      logger: false,
      abortOnError: false,
    });
    try {
      await expect(app.listen()).rejects.toThrow(
        /OrdersEvents\.handle has @UseInterceptors\(ExactlyOnceInterceptor\) on its class but is not a @StreamShardHandler method/,
      );
    } finally {
      await app.close();
    }
  });

  it('@ExactlyOnce() on an HTTP route and on a plain provider method', async () => {
    @Controller('orders')
    class OrdersHttp {
      @Get()
      @ExactlyOnce()
      list(): string[] {
        return [];
      }
    }
    @Injectable()
    class OrdersService {
      // called directly by application code: no interceptor ever runs
      @ExactlyOnce()
      place(): void {}
    }
    const cases: Array<[string, ModuleMetadata]> = [
      ['OrdersHttp.list', { controllers: [OrdersHttp] }],
      ['OrdersService.place', { providers: [OrdersService] }],
    ];
    for (const [name, metadata] of cases) {
      @Module({
        imports: [PostgresExactlyOnceModule.forRoot({ connectionString: db.url })],
        ...metadata,
      })
      class AppModule {}
      const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
      try {
        await expect(app.init()).rejects.toThrow(
          `${name} has @ExactlyOnce() but is not a @StreamShardHandler method`,
        );
      } finally {
        await app.close();
      }
    }
  });
});
