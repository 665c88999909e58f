import 'reflect-metadata';
import {
  type ArgumentsHost,
  BadRequestException,
  type CallHandler,
  type CanActivate,
  Catch,
  type ExecutionContext,
  type INestApplicationContext,
  Inject,
  Injectable,
  Module,
  type NestInterceptor,
  type Provider,
  RequestTimeoutException,
  type RpcExceptionFilter,
  Scope,
  UseFilters,
  UseGuards,
  UseInterceptors,
  UsePipes,
} from '@nestjs/common';
import {
  APP_INTERCEPTOR,
  type ContextId,
  ContextIdFactory,
  type ContextIdStrategy,
  NestFactory,
  REQUEST,
} from '@nestjs/core';
import {
  NonRetryableError,
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamProducer,
  type StreamShardContext,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime, StreamHandlerRegistry } from '@redis-stream-coordinator/nestjs/internal';
import { type StreamRouting, slotOf } from '@redis-stream-coordinator/nestjs/protocol';
import { EMPTY, type Observable, TimeoutError, catchError, throwError, timeout } from 'rxjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { CollectingLogger } from './member-app.js';
import { waitFor } from '../../support/wait.js';

/** One dead-letter entry, fields by name. */
type DeadLetter = Record<string, string>;

/** Nest's documented RPC exception filter: hands the exception back as an erroring Observable. */
@Catch()
class ThrowErrorFilter implements RpcExceptionFilter {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}

/** Swallows the exception with an Observable that completes without a value. */
@Catch()
class EmptyFilter implements RpcExceptionFilter {
  catch(): Observable<never> {
    return EMPTY;
  }
}

/** Nest's documented `TimeoutInterceptor`. */
@Injectable()
class TimeoutInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      timeout(150),
      catchError((error: unknown) =>
        throwError(() => (error instanceof TimeoutError ? new RequestTimeoutException() : error)),
      ),
    );
  }
}

/** What a handler saw: each call's start and end (ms since the test began). */
@Injectable()
class Calls {
  readonly spans: Array<{ id: string; delivery: number; start: number; end?: number }> = [];
  private readonly origin = Date.now();

  begin(message: StreamShardMessage): { end: () => void } {
    const span: { id: string; delivery: number; start: number; end?: number } = {
      id: message.id,
      delivery: message.deliveryCount,
      start: Date.now() - this.origin,
    };
    this.spans.push(span);
    return {
      end: () => {
        span.end = Date.now() - this.origin;
      },
    };
  }
}

const MAX_DELIVERIES = 3;
const STREAMS = [
  'filtered',
  'filter-empty',
  'timed',
  'nr-pipe',
  'nr-error',
  'nr-guard',
  'nr-plain',
  'scoped',
  'durable',
];
/** Streams with two shards (a second member takes one over by a revoke). */
const TWO_SHARD_STREAMS = ['revoked'];

describe('e2e: the Nest handler pipeline decides ack, retry and dead-letter', () => {
  const redis = useRedisPrefix('e2e-pipeline');
  let coordinator: CoordinatorProcess;
  const api = (): CoordinatorApi => new CoordinatorApi(coordinator.url);
  const apps: INestApplicationContext[] = [];
  let groups = 0;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      // one stream per test: a new group reads its stream from the start
      env: {
        STREAMS: [
          ...STREAMS.map((stream) => `${stream}:1`),
          ...TWO_SHARD_STREAMS.map((stream) => `${stream}:2`),
        ].join(','),
        HEARTBEAT_INTERVAL_MS: '500',
        SESSION_TIMEOUT_MS: '3000',
      },
    });
  });
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close().catch(() => undefined);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  /** Boots a member app with `providers` in a group of its own; resolves once it owns its shards. */
  const start = async (
    providers: Provider[],
    module: Partial<StreamCoordinatorModuleOptions> = {},
    shards?: number,
  ): Promise<{ app: INestApplicationContext; group: string; logs: CollectingLogger }> => {
    const group = `pipeline-${++groups}`;
    const logs = new CollectingLogger();
    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: coordinator.url,
          token: TEST_TOKENS.member,
          redis: redisUrl(),
          group,
          memberId: `${group}-m`,
          logger: logs,
          metrics: false,
          handlerDefaults: {
            maxDeliveries: MAX_DELIVERIES,
            retry: { initialDelayMs: 20, maxDelayMs: 20 },
          },
          ...module,
        }),
      ],
      providers: [Calls, ...providers],
    })
    class AppModule {}
    const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
    apps.push(app);
    const runtime = app.get(MemberRuntime);
    // every stream has one shard
    const streams = shards ?? app.get(StreamHandlerRegistry).size;
    await waitFor(() => runtime.status().held.length === streams, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: `${group} to own ${streams} shards`,
    });
    return { app, group, logs };
  };

  const routingOf = async (stream: string): Promise<StreamRouting> =>
    (await api().get<StreamRouting>(`/v1/streams/${stream}`)).body;

  /** The entries of a stream's dead-letter stream, fields by name. */
  const deadLetters = async (stream: string): Promise<DeadLetter[]> =>
    (await redis.redis().xrange((await routingOf(stream)).deadLetterKey, '-', '+')).map(
      ([, fields]) => {
        const entry: DeadLetter = {};
        for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
        return entry;
      },
    );

  /** Entries of the stream's (one) shard pending in `group`. */
  const pending = async (stream: string, group: string): Promise<number> =>
    Number(
      (
        (await redis
          .redis()
          .xpending((await routingOf(stream)).shards[0]?.key as string, group)) as unknown[]
      )[0],
    );

  it('an exception filter returning throwError() fails the message: retried, then dead-lettered', async () => {
    @Injectable()
    class FilteredHandler {
      constructor(private readonly calls: Calls) {}

      @StreamShardHandler('filtered')
      @UseFilters(ThrowErrorFilter)
      handle(message: StreamShardMessage): void {
        this.calls.begin(message).end();
        throw new Error(`refusing ${message.key}`);
      }
    }
    const { app, group } = await start([FilteredHandler]);
    const id = await app.get(StreamProducer).publish('filtered', 'k-1', { n: 1 });

    await waitFor(async () => (await deadLetters('filtered')).length === 1, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'a dead letter',
    });
    const [letter] = await deadLetters('filtered');
    expect(letter).toMatchObject({
      id,
      reason: 'max-deliveries',
      deliveryCount: String(MAX_DELIVERIES),
      error: 'refusing k-1',
    });
    expect(letter?.stack).toContain('FilteredHandler.handle');
    expect(app.get(Calls).spans.map((s) => s.delivery)).toEqual([1, 2, 3]);
    await waitFor(async () => (await pending('filtered', group)) === 0, {
      timeoutMs: 5_000,
      intervalMs: 20,
      message: 'the ack',
    });
  });

  it('an exception filter returning an empty Observable (EMPTY) handled nothing: retried, then dead-lettered', async () => {
    @Injectable()
    class EmptyFilteredHandler {
      constructor(private readonly calls: Calls) {}

      @StreamShardHandler('filter-empty')
      @UseFilters(EmptyFilter)
      handle(message: StreamShardMessage): void {
        this.calls.begin(message).end();
        throw new Error(`refusing ${message.key}`);
      }
    }
    const { app, group } = await start([EmptyFilteredHandler]);
    const id = await app.get(StreamProducer).publish('filter-empty', 'k-e', { n: 1 });

    await waitFor(async () => (await deadLetters('filter-empty')).length === 1, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'a dead letter',
    });
    const [letter] = await deadLetters('filter-empty');
    expect(letter).toMatchObject({ id, reason: 'max-deliveries' });
    expect(letter?.error).toContain('completed without a value');
    expect(letter?.error).toContain('refusing k-e');
    expect(app.get(Calls).spans.map((s) => s.delivery)).toEqual([1, 2, 3]);
    await waitFor(async () => (await pending('filter-empty', group)) === 0, {
      timeoutMs: 5_000,
      intervalMs: 20,
      message: 'the ack',
    });
  });

  it('a timeout interceptor: the retry starts only after the timed-out call ended; each timeout is a failure', async () => {
    const CALL_MS = 600;
    @Injectable()
    class SlowHandler {
      constructor(private readonly calls: Calls) {}

      @StreamShardHandler('timed')
      @UseInterceptors(TimeoutInterceptor)
      async handle(message: StreamShardMessage): Promise<void> {
        const call = this.calls.begin(message);
        await new Promise((resolve) => setTimeout(resolve, CALL_MS));
        call.end();
      }
    }
    const { app, logs } = await start([SlowHandler]);
    const id = await app.get(StreamProducer).publish('timed', 'k-2', { n: 2 });

    await waitFor(async () => (await deadLetters('timed')).length === 1, {
      timeoutMs: 20_000,
      intervalMs: 20,
      message: 'a dead letter',
    });
    const [letter] = await deadLetters('timed');
    expect(letter).toMatchObject({ id, reason: 'max-deliveries', error: 'Request Timeout' });
    const spans = app.get(Calls).spans;
    expect(spans.map((s) => s.delivery)).toEqual([1, 2, 3]);
    // one call at a time: each call ended before the next one began
    for (let i = 1; i < spans.length; i++) {
      expect(spans[i - 1]?.end, `call ${i} ended`).toBeDefined();
      expect(spans[i]!.start).toBeGreaterThanOrEqual(spans[i - 1]!.end!);
    }
    // every attempt counted as a failure, with the interceptor's error
    const failures = logs.lines.filter((l) => l.message.includes(`handler failed for entry ${id}`));
    expect(failures).toHaveLength(MAX_DELIVERIES);
    expect(failures[0]?.message).toContain('Request Timeout');
  });

  it('a revoke waits for a call a timeout interceptor gave up on: the shard moves only after the method returned', async () => {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const started: number[] = [];
    const ended: number[] = [];
    let timeouts = 0;
    /** Nest's documented `TimeoutInterceptor`, counting the calls it gave up on. */
    @Injectable()
    class CountingTimeoutInterceptor implements NestInterceptor {
      intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
        return next.handle().pipe(
          timeout(150),
          catchError(() => {
            timeouts++;
            return throwError(() => new RequestTimeoutException());
          }),
        );
      }
    }
    @Injectable()
    class GatedHandler {
      @StreamShardHandler('revoked')
      @UseInterceptors(CountingTimeoutInterceptor)
      async handle(_message: StreamShardMessage, context: StreamShardContext): Promise<void> {
        started.push(context.shard);
        await gate;
        ended.push(context.shard);
      }
    }
    const first = await start([GatedHandler], {}, 2);
    const runtime = first.app.get(MemberRuntime);
    // one message per shard: whichever shard the revoke takes, its call is still running
    const { routing } = await routingOf('revoked');
    const keyFor = (shard: number): string => {
      const range = routing.ranges.find((r) => r.shard === shard)!;
      for (let i = 0; ; i++) {
        const slot = slotOf(`r-${i}`, routing.slots, routing.seed);
        if (slot >= range.from && slot < range.to) return `r-${i}`;
      }
    };
    const producer = first.app.get(StreamProducer);
    for (const { shard } of routing.ranges) {
      await producer.publish('revoked', keyFor(shard), { shard });
    }
    await waitFor(() => started.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'both calls to start',
    });
    // the interceptor gave up on both calls: the chain settled, the methods still run
    await waitFor(() => timeouts === 2, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'both calls to time out',
    });

    const second = start([GatedHandler], { group: first.group, memberId: `${first.group}-b` }, 1);
    second.catch(() => undefined);
    await waitFor(() => runtime.status().assigned.length === 1, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the revoke to start',
    });
    // the revoked shard's reader is held while its method runs, through several heartbeats
    // (500 ms): it is not reported released, so the coordinator does not hand it over
    const watchUntil = Date.now() + 2_000;
    while (Date.now() < watchUntil) {
      expect(runtime.status().held).toHaveLength(2);
      expect(ended).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    open();
    const { app: next } = await second;
    // both first calls ended (the kept shard's message is then retried, its call ends again)
    expect(ended.slice(0, 2).sort((a, b) => a - b)).toEqual([0, 1]);
    expect(runtime.status().held).toHaveLength(1);
    expect(next.get(MemberRuntime).status().held).toHaveLength(1);
  });

  it('dead-letters at once, without retries: a nonRetryable exception, a NonRetryableError, a guard denial', async () => {
    class RejectPipe {
      transform(): never {
        throw new BadRequestException('payload.customerId is required');
      }
    }
    class DenyGuard implements CanActivate {
      canActivate(): boolean {
        return false;
      }
    }
    @Injectable()
    class Handlers {
      constructor(private readonly calls: Calls) {}

      @StreamShardHandler('nr-pipe', { nonRetryable: [BadRequestException] })
      @UsePipes(RejectPipe)
      pipe(): void {}

      @StreamShardHandler('nr-error')
      error(message: StreamShardMessage): void {
        this.calls.begin(message).end();
        throw new NonRetryableError(`no customer ${message.key}`);
      }

      @StreamShardHandler('nr-guard')
      @UseGuards(DenyGuard)
      guard(): void {}

      // not listed: retried as usual
      @StreamShardHandler('nr-plain')
      @UsePipes(RejectPipe)
      plain(): void {}
    }
    const { app, group } = await start([Handlers]);
    const producer = app.get(StreamProducer);
    const ids = {
      pipe: await producer.publish('nr-pipe', 'k-3', {}),
      error: await producer.publish('nr-error', 'k-4', {}),
      guard: await producer.publish('nr-guard', 'k-5', {}),
      plain: await producer.publish('nr-plain', 'k-6', {}),
    };
    const letterOf = async (stream: string): Promise<DeadLetter | undefined> =>
      (await deadLetters(stream))[0];
    await waitFor(
      async () =>
        (await Promise.all(['nr-pipe', 'nr-error', 'nr-guard', 'nr-plain'].map(letterOf))).every(
          (letter) => letter !== undefined,
        ),
      { timeoutMs: 15_000, intervalMs: 20, message: 'four dead letters' },
    );
    expect(await letterOf('nr-pipe')).toMatchObject({
      id: ids.pipe,
      reason: 'non-retryable',
      deliveryCount: '1',
      error: 'payload.customerId is required',
    });
    expect((await letterOf('nr-pipe'))?.stack).toContain('RejectPipe.transform');
    expect(await letterOf('nr-error')).toMatchObject({
      id: ids.error,
      reason: 'non-retryable',
      deliveryCount: '1',
      error: 'no customer k-4',
    });
    expect(app.get(Calls).spans).toHaveLength(1);
    expect(await letterOf('nr-guard')).toMatchObject({
      id: ids.guard,
      reason: 'non-retryable',
      deliveryCount: '1',
    });
    expect(await letterOf('nr-plain')).toMatchObject({
      id: ids.plain,
      reason: 'max-deliveries',
      deliveryCount: String(MAX_DELIVERIES),
    });
    for (const stream of ['nr-pipe', 'nr-error', 'nr-guard', 'nr-plain'])
      await waitFor(async () => (await pending(stream, group)) === 0, {
        timeoutMs: 5_000,
        intervalMs: 20,
        message: `the ack on ${stream}`,
      });
  });

  it('a request-scoped APP_INTERCEPTOR and a request-scoped host are built for each message', async () => {
    @Injectable({ scope: Scope.REQUEST })
    class TenantInterceptor implements NestInterceptor {
      private readonly tenant: string;

      constructor(@Inject(REQUEST) context: StreamShardContext) {
        this.tenant = context.key.toUpperCase();
      }

      intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
        if (this.tenant === undefined) throw new Error('constructor never ran');
        return next.handle();
      }
    }
    @Injectable({ scope: Scope.REQUEST })
    class ScopedHandler {
      constructor(
        @Inject(REQUEST) private readonly context: StreamShardContext,
        private readonly calls: Calls,
      ) {}

      @StreamShardHandler('scoped')
      handle(message: StreamShardMessage): void {
        if (this.context.id !== message.id) throw new Error('another message context');
        this.calls.begin(message).end();
      }
    }
    const { app, group } = await start([
      ScopedHandler,
      { provide: APP_INTERCEPTOR, scope: Scope.REQUEST, useClass: TenantInterceptor },
    ]);
    const producer = app.get(StreamProducer);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push(await producer.publish('scoped', `k-${n}`, { n }));
    await waitFor(() => app.get(Calls).spans.length === 5, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'five handled messages',
    });
    expect(app.get(Calls).spans.map((s) => s.id)).toEqual(ids);
    expect(app.get(Calls).spans.every((s) => s.delivery === 1)).toBe(true);
    await waitFor(async () => (await pending('scoped', group)) === 0, {
      timeoutMs: 5_000,
      intervalMs: 20,
      message: 'the acks',
    });
    expect(await deadLetters('scoped')).toEqual([]);
  });

  it('applies the ContextIdStrategy: a durable provider is built once per tenant, with its payload as REQUEST', async () => {
    const parents = new Map<string, ContextId>();
    const strategy: ContextIdStrategy<StreamShardContext> = {
      attach(contextId, context) {
        const tenant = context.key;
        let parent = parents.get(tenant);
        if (parent === undefined) parents.set(tenant, (parent = ContextIdFactory.create()));
        return {
          resolve: (info) => (info.isTreeDurable ? parent : contextId),
          payload: { tenant },
        };
      },
    };
    const built: unknown[] = [];
    const seen: string[] = [];
    @Injectable({ scope: Scope.REQUEST, durable: true })
    class TenantConnection {
      constructor(@Inject(REQUEST) readonly request: { tenant?: string }) {
        built.push(request.tenant);
      }
    }
    @Injectable()
    class DurableHandler {
      constructor(private readonly connection: TenantConnection) {}

      @StreamShardHandler('durable')
      handle(message: StreamShardMessage): void {
        seen.push(`${message.key}:${String(this.connection.request.tenant)}`);
      }
    }
    ContextIdFactory.apply(strategy);
    try {
      const { app } = await start([TenantConnection, DurableHandler]);
      const producer = app.get(StreamProducer);
      for (const tenant of ['t-a', 't-a', 't-b', 't-a']) {
        await producer.publish('durable', tenant, { tenant });
      }
      await waitFor(() => seen.length === 4, {
        timeoutMs: 10_000,
        intervalMs: 20,
        message: 'four messages',
      });
      expect(seen).toEqual(['t-a:t-a', 't-a:t-a', 't-b:t-b', 't-a:t-a']);
      expect(built).toEqual(['t-a', 't-b']);
    } finally {
      ContextIdFactory.apply(undefined as unknown as ContextIdStrategy);
    }
  });
});
