import 'reflect-metadata';
import {
  Controller,
  Get,
  Inject,
  Injectable,
  type INestApplicationContext,
  Scope,
  UseInterceptors,
} from '@nestjs/common';
import { REQUEST } from '@nestjs/core';
import {
  ExactlyOnce,
  ExactlyOnceInterceptor,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { bootContext, invoke, shardMessage } from './fixtures.js';
import {
  DuplicateStreamHandlerError,
  InvalidStreamHandlerError,
  type ResolvedStreamCoordinatorOptions,
  STREAM_COORDINATOR_OPTIONS,
  StreamHandlerRegistry,
  type StreamShardContext,
  StreamShardHandler,
  type StreamShardMessage,
} from './library.js';

const apps: INestApplicationContext[] = [];

async function boot(...args: Parameters<typeof bootContext>): Promise<INestApplicationContext> {
  const app = await bootContext(...args);
  apps.push(app);
  return app;
}

async function bootFailure(...args: Parameters<typeof bootContext>): Promise<unknown> {
  return bootContext(...args).then(
    async (app) => {
      await app.close();
      throw new Error('expected the bootstrap to fail');
    },
    (error: unknown) => error,
  );
}

afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

@Injectable()
class OrdersHandler {
  readonly seen: StreamShardMessage[] = [];

  @StreamShardHandler('orders', { batchSize: 10, retry: { maxDelayMs: 800 } })
  async handle(message: StreamShardMessage): Promise<void> {
    this.seen.push(message);
  }

  notAHandler(): void {}
}

@Controller('payments')
class PaymentsController {
  readonly seen: string[] = [];

  @Get()
  list(): string[] {
    return this.seen;
  }

  @StreamShardHandler('payments')
  onPayment(message: StreamShardMessage<{ amount: number }>): void {
    this.seen.push(`${message.payload.amount}`);
  }
}

describe('handler discovery', () => {
  it('registers handlers of providers and controllers with merged options', async () => {
    const app = await boot(
      { providers: [OrdersHandler], controllers: [PaymentsController] },
      { handlerDefaults: { concurrency: 4 } },
    );
    const registry = app.get(StreamHandlerRegistry);
    expect(registry.streams()).toEqual(['orders', 'payments']);
    expect(registry.get('orders')).toMatchObject({
      className: 'OrdersHandler',
      methodName: 'handle',
      options: {
        concurrency: 4,
        batchSize: 10,
        blockMs: 2000,
        maxDeliveries: 5,
        retry: { initialDelayMs: 100, maxDelayMs: 800, multiplier: 2 },
        deadLetter: true,
      },
    });
    expect(registry.get('payments')).toMatchObject({
      className: 'PaymentsController',
      methodName: 'onPayment',
    });
    expect(registry.isPublishOnly()).toBe(false);

    await invoke(app, 'orders', shardMessage({ n: 1 }));
    await invoke(app, 'payments', shardMessage({ amount: 12 }, { stream: 'payments' }));
    expect(app.get(OrdersHandler).seen).toHaveLength(1);
    expect(app.get(PaymentsController).seen).toEqual(['12']);
  });

  it('is publish-only when no handler exists', async () => {
    const app = await boot({});
    expect(app.get(StreamHandlerRegistry).streams()).toEqual([]);
    expect(app.get(StreamHandlerRegistry).isPublishOnly()).toBe(true);
  });

  it('fails the bootstrap on two handlers for one stream, naming both', async () => {
    @Injectable()
    class LegacyOrdersHandler {
      @StreamShardHandler('orders')
      onOrder(): void {}
    }
    const error = await bootFailure({ providers: [OrdersHandler, LegacyOrdersHandler] });
    expect(error).toBeInstanceOf(DuplicateStreamHandlerError);
    expect((error as Error).message).toBe(
      'Stream "orders" has two @StreamShardHandler methods: OrdersHandler.handle and LegacyOrdersHandler.onOrder. ' +
        'An application has exactly one handler per stream; remove one or merge them.',
    );
  });

  it('builds a request-scoped host per message, with the message context as REQUEST', async () => {
    const built: Array<{ request: unknown; instance: object }> = [];
    @Injectable({ scope: Scope.REQUEST })
    class ScopedHandler {
      constructor(@Inject(REQUEST) readonly request: StreamShardContext) {
        built.push({ request, instance: this });
      }

      @StreamShardHandler('orders')
      handle(message: StreamShardMessage): void {
        expect(this.request.id).toBe(message.id);
      }
    }
    const app = await boot({ providers: [ScopedHandler] });
    expect(built).toHaveLength(0);
    await invoke(app, 'orders', shardMessage({}, { id: '1-1' }));
    await invoke(app, 'orders', shardMessage({}, { id: '1-2' }));
    expect(built.map((b) => (b.request as StreamShardContext).id)).toEqual(['1-1', '1-2']);
    expect(built[0]?.instance).not.toBe(built[1]?.instance);
  });

  it('builds a host per message when a dependency is request-scoped, and a transient host too', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class Repository {
      constructor(@Inject(REQUEST) readonly request: StreamShardContext) {}
    }
    const seen: string[] = [];
    @Injectable()
    class RequestDependentHandler {
      constructor(private readonly repository: Repository) {}

      @StreamShardHandler('orders')
      handle(): void {
        seen.push(`dependent:${this.repository.request.id}`);
      }
    }
    @Injectable({ scope: Scope.TRANSIENT })
    class TransientHandler {
      private calls = 0;

      @StreamShardHandler('payments')
      handle(): void {
        seen.push(`transient:${++this.calls}`);
      }
    }
    const app = await boot({ providers: [Repository, RequestDependentHandler, TransientHandler] });
    await invoke(app, 'orders', shardMessage({}, { id: '2-1' }));
    await invoke(app, 'payments', shardMessage({}, { id: '2-2', stream: 'payments' }));
    await invoke(app, 'payments', shardMessage({}, { id: '2-3', stream: 'payments' }));
    expect(seen).toEqual(['dependent:2-1', 'transient:1', 'transient:1']);
  });

  it('fails the bootstrap when merged options are inconsistent, naming Class.method', async () => {
    @Injectable()
    class SlowRetryHandler {
      @StreamShardHandler('orders', { retry: { initialDelayMs: 2000 } })
      handle(): void {}
    }
    const error = await bootFailure(
      { providers: [SlowRetryHandler] },
      { handlerDefaults: { retry: { maxDelayMs: 1000 } } },
    );
    expect(error).toBeInstanceOf(InvalidStreamHandlerError);
    expect((error as Error).message).toBe(
      '@StreamShardHandler on SlowRetryHandler.handle: option "retry.initialDelayMs" must not be greater than "maxDelayMs" (got 2000, with maxDelayMs 1000); raise maxDelayMs or lower initialDelayMs',
    );
  });

  it('refuses @ExactlyOnce() with ordering "key" (also from handlerDefaults) and on a batch handler', async () => {
    // the pool connects lazily: no query runs before the explorer refuses the handler
    const postgres = PostgresExactlyOnceModule.forRoot({
      connectionString: 'postgres://postgres@127.0.0.1:5432/test',
    });
    @Injectable()
    class KeyOrderedEffects {
      @StreamShardHandler('orders', { ordering: 'key' })
      @ExactlyOnce()
      handle(): void {}
    }
    const own = await bootFailure({ imports: [postgres], providers: [KeyOrderedEffects] });
    expect(own).toBeInstanceOf(InvalidStreamHandlerError);
    expect((own as Error).message).toContain(
      'KeyOrderedEffects.handle: has @ExactlyOnce() with ordering "key"',
    );
    @Injectable()
    class DefaultOrderedEffects {
      @StreamShardHandler('orders')
      @ExactlyOnce()
      handle(): void {}
    }
    const inherited = await bootFailure(
      { imports: [postgres], providers: [DefaultOrderedEffects] },
      { handlerDefaults: { ordering: 'key' } },
    );
    expect((inherited as Error).message).toContain('with ordering "key"');
    @Injectable()
    class BatchEffects {
      @StreamShardHandler('orders', { batch: { maxSize: 10 } })
      @ExactlyOnce()
      handle(): void {}
    }
    const batch = await bootFailure({ imports: [postgres], providers: [BatchEffects] });
    expect((batch as Error).message).toContain(
      'BatchEffects.handle: has @ExactlyOnce() on a batch handler',
    );
    // review finding B: the public interceptor applied by hand is refused the same way
    @Injectable()
    class InterceptedBatchEffects {
      @StreamShardHandler('orders', { batch: { maxSize: 10 } })
      @UseInterceptors(ExactlyOnceInterceptor)
      handle(): void {}
    }
    const intercepted = await bootFailure({
      imports: [postgres],
      providers: [InterceptedBatchEffects],
    });
    expect(intercepted).toBeInstanceOf(InvalidStreamHandlerError);
    expect((intercepted as Error).message).toContain(
      'InterceptedBatchEffects.handle: has @UseInterceptors(ExactlyOnceInterceptor) on a batch handler',
    );
    @Injectable()
    @UseInterceptors(ExactlyOnceInterceptor)
    class InterceptedKeyOrderedEffects {
      @StreamShardHandler('orders', { ordering: 'key' })
      handle(): void {}
    }
    const classLevel = await bootFailure({
      imports: [postgres],
      providers: [InterceptedKeyOrderedEffects],
    });
    expect((classLevel as Error).message).toContain(
      'InterceptedKeyOrderedEffects.handle: has @UseInterceptors(ExactlyOnceInterceptor) with ordering "key"',
    );
  });

  it('finds inherited handlers and registers an aliased or shared instance once', async () => {
    class BaseHandler {
      readonly seen: string[] = [];

      @StreamShardHandler('orders')
      handle(message: StreamShardMessage): void {
        this.seen.push(message.id);
      }
    }
    @Injectable()
    class ConcreteHandler extends BaseHandler {}
    const app = await boot({
      providers: [
        ConcreteHandler,
        { provide: 'ALIAS', useExisting: ConcreteHandler },
        {
          provide: 'SAME_OBJECT',
          useFactory: (handler: ConcreteHandler) => handler,
          inject: [ConcreteHandler],
        },
      ],
    });
    expect(app.get(StreamHandlerRegistry).get('orders')).toMatchObject({
      className: 'ConcreteHandler',
    });
    await invoke(app, 'orders', shardMessage({}, { id: '5-0' }));
    expect(app.get(ConcreteHandler).seen).toEqual(['5-0']);
  });

  it('keeps two applications in one process apart', async () => {
    @Injectable()
    class OtherHandler {
      @StreamShardHandler('refunds')
      handle(): void {}
    }
    const first = await boot({ providers: [OrdersHandler] });
    const second = await boot({ providers: [OtherHandler] });
    expect(first.get(StreamHandlerRegistry).streams()).toEqual(['orders']);
    expect(second.get(StreamHandlerRegistry).streams()).toEqual(['refunds']);
    expect(first.get(StreamHandlerRegistry)).not.toBe(second.get(StreamHandlerRegistry));
    // The same handler class in two apps: each app has its own instance and no duplicate error.
    const third = await boot({ providers: [OrdersHandler] });
    await invoke(third, 'orders', shardMessage({}));
    expect(third.get(OrdersHandler).seen).toHaveLength(1);
    expect(first.get(OrdersHandler).seen).toHaveLength(0);
    // Default member ids differ between the runtimes of one process.
    const ids = [first, second, third].map((app) => {
      const { memberId } = app.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS);
      return memberId.kind === 'fixed' ? memberId.id : memberId.kind;
    });
    expect(new Set(ids).size).toBe(3);
  });
});
