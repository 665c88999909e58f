import { Injectable, type INestApplicationContext, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamProducer,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import {
  type MemberHealthOptions,
  StreamCoordinatorHealthIndicator,
  StreamCoordinatorHealthModule,
} from '@redis-stream-coordinator/nestjs/health';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { CollectingLogger } from '../../library/e2e/member-app.js';

/** Options of {@link startObservedMember}. */
export interface ObservedMemberOptions {
  readonly coordinatorUrl: string;
  readonly redis: string;
  readonly group: string;
  readonly memberId: string;
  /** The `orders` handler's work (default: resolve at once). */
  readonly handle?: (message: StreamShardMessage<{ seq?: number }>) => Promise<void>;
  /** `blockMs` of the handler (short, so a black-holed read is noticed quickly). */
  readonly blockMs?: number;
  readonly maxDeliveries?: number;
  readonly health?: MemberHealthOptions;
  readonly module?: Partial<StreamCoordinatorModuleOptions>;
}

/** A member application with the health module, started in this process. */
export interface ObservedMember {
  readonly app: INestApplicationContext;
  readonly runtime: MemberRuntime;
  readonly producer: StreamProducer;
  readonly health: StreamCoordinatorHealthIndicator;
  readonly logs: CollectingLogger;
  /** Messages the handler resolved. */
  handled: number;
  close(): Promise<void>;
}

/**
 * Boots a Nest application context with `StreamCoordinatorModule` (one `orders` handler, a fresh
 * class per app) and `StreamCoordinatorHealthModule`, as an app author would wire them.
 */
export async function startObservedMember(options: ObservedMemberOptions): Promise<ObservedMember> {
  const logs = new CollectingLogger();
  const state = { handled: 0 };
  const work = options.handle ?? (() => Promise.resolve());

  @Injectable()
  class OrdersHandler {
    @StreamShardHandler('orders', {
      blockMs: options.blockMs ?? 500,
      maxDeliveries: options.maxDeliveries ?? 3,
      retry: { initialDelayMs: 10, maxDelayMs: 50 },
    })
    async handle(message: StreamShardMessage<{ seq?: number }>): Promise<void> {
      await work(message);
      state.handled++;
    }
  }

  @Module({
    imports: [
      StreamCoordinatorModule.forRoot({
        coordinatorUrl: options.coordinatorUrl,
        token: TEST_TOKENS.member,
        redis: options.redis,
        group: options.group,
        memberId: options.memberId,
        logger: logs,
        metrics: false,
        requestTimeoutMs: 2000,
        ...options.module,
      }),
      StreamCoordinatorHealthModule.forRoot(options.health ?? {}),
    ],
    providers: [OrdersHandler],
  })
  class AppModule {}

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  app.enableShutdownHooks();
  let closed = false;
  return {
    app,
    runtime: app.get(MemberRuntime),
    producer: app.get(StreamProducer),
    health: app.get(StreamCoordinatorHealthIndicator),
    logs,
    get handled() {
      return state.handled;
    },
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
    },
  };
}

/** The status and data of one terminus indicator result. */
export interface IndicatorView {
  readonly status: string;
  readonly reason?: string;
  readonly [key: string]: unknown;
}

/** Reads the single entry of an indicator result (`{key: {status, ...}}`). */
export function view(result: Record<string, unknown>, key: string): IndicatorView {
  return result[key] as IndicatorView;
}
