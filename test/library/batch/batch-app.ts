import { Injectable, type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import {
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamProducer,
  type StreamShardBatchOptions,
  type StreamShardBatchResult,
  type StreamShardContext,
  StreamShardHandler,
  type StreamShardHandlerOptions,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { CollectingLogger } from '../e2e/member-app.js';

/** One call of a batch handler. */
export interface BatchCall {
  readonly memberId: string;
  readonly shard: number;
  readonly ids: readonly string[];
  readonly seqs: readonly number[];
  readonly deliveryCounts: readonly number[];
  readonly at: number;
}

/** What a test's batch handler does with one call (after it was recorded). */
export type BatchWork = (
  messages: ReadonlyArray<StreamShardMessage<{ seq: number }>>,
  context: StreamShardContext,
  call: number,
) => Promise<StreamShardBatchResult | void>;

export interface BatchApp {
  readonly app: INestApplicationContext;
  readonly runtime: MemberRuntime;
  readonly producer: StreamProducer;
  readonly calls: BatchCall[];
  readonly logger: CollectingLogger;
}

/**
 * Boots a Nest application context with one `@StreamShardHandler(stream, { batch })` provider
 * (a fresh class per app). Without `work` the app is publish-only.
 */
export async function startBatchApp(options: {
  readonly coordinatorUrl: string;
  readonly redis: string;
  readonly group: string;
  readonly memberId: string;
  readonly stream: string;
  readonly batch?: StreamShardBatchOptions;
  readonly handler?: Omit<StreamShardHandlerOptions, 'batch'>;
  readonly work?: BatchWork;
  readonly module?: Partial<StreamCoordinatorModuleOptions>;
  /** Applies method decorators (guards, interceptors) to the handler. */
  readonly enhance?: readonly MethodDecorator[];
}): Promise<BatchApp> {
  const calls: BatchCall[] = [];
  const logger = new CollectingLogger();
  const providers: Array<new (...args: never[]) => unknown> = [];
  const given = options.work;
  if (given !== undefined) {
    const work = given;
    @Injectable()
    class BatchHandler {
      @StreamShardHandler(options.stream, {
        ...options.handler,
        batch: options.batch ?? { maxSize: 10 },
      })
      async handle(
        messages: ReadonlyArray<StreamShardMessage<{ seq: number }>>,
        context: StreamShardContext,
      ): Promise<StreamShardBatchResult | void> {
        calls.push({
          memberId: context.memberId,
          shard: context.shard,
          ids: messages.map((m) => m.id),
          seqs: messages.map((m) => m.payload.seq),
          deliveryCounts: messages.map((m) => m.deliveryCount),
          at: performance.now(),
        });
        return work(messages, context, calls.length - 1);
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(BatchHandler.prototype, 'handle');
    for (const decorate of options.enhance ?? [])
      decorate(BatchHandler.prototype, 'handle', descriptor as PropertyDescriptor);
    providers.push(BatchHandler);
  }

  @Module({
    imports: [
      StreamCoordinatorModule.forRoot({
        coordinatorUrl: options.coordinatorUrl,
        token: TEST_TOKENS.member,
        redis: options.redis,
        group: options.group,
        memberId: options.memberId,
        logger,
        metrics: false,
        ...(given === undefined ? { publishOnly: true } : {}),
        ...options.module,
      }),
    ],
    providers,
  })
  class AppModule {}

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  return {
    app,
    runtime: app.get(MemberRuntime),
    producer: app.get(StreamProducer),
    calls,
    logger,
  };
}
