import {
  Injectable,
  type INestApplicationContext,
  type LoggerService,
  Module,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamProducer,
  StreamShardContext,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime, MemberRuntimeEvents } from '@redis-stream-coordinator/nestjs/internal';
import { preciseNow, wallClockOf } from '../../../apps/example-worker/src/record-clock.js';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import type { AckRecord } from '../../support/invariants/index.js';

/** One message an in-process app handled. */
export interface AppHandled {
  readonly memberId: string;
  readonly shard: number;
  readonly key: string;
  readonly id: string;
  readonly seq: number;
  readonly deliveryCount: number;
  readonly t0: number;
  readonly t1: number;
}

/** Options of {@link startMemberApp}. */
export interface MemberAppOptions {
  readonly coordinatorUrl: string;
  readonly redis: string;
  readonly group: string;
  readonly memberId?: string;
  /** The `orders` handler's work; omitted: the app has no handler at all (publish-only). */
  readonly handle?: (
    message: StreamShardMessage<{ seq: number }>,
    context: StreamShardContext,
  ) => Promise<void>;
  readonly module?: Partial<StreamCoordinatorModuleOptions>;
}

/** A Nest application context with the module, started in this process. */
export interface MemberApp {
  readonly app: INestApplicationContext;
  readonly runtime: MemberRuntime;
  readonly producer: StreamProducer;
  /** Every message its handler resolved, in order. */
  readonly handled: AppHandled[];
  /** Every ack batch Redis accepted (the readers' `acked` activity), as worker ack records. */
  readonly acks: AckRecord[];
  readonly logs: LogLine[];
}

/** One line the library (or Nest) logged. */
export interface LogLine {
  readonly level: 'log' | 'error' | 'warn' | 'debug' | 'verbose' | 'fatal';
  readonly message: string;
  readonly at: number;
}

/** A logger that keeps what it is given (and prints nothing). */
export class CollectingLogger implements LoggerService {
  readonly lines: LogLine[] = [];
  private add(level: LogLine['level'], message: unknown): void {
    this.lines.push({ level, message: String(message), at: Date.now() });
  }
  log(message: unknown): void {
    this.add('log', message);
  }
  error(message: unknown): void {
    this.add('error', message);
  }
  warn(message: unknown): void {
    this.add('warn', message);
  }
  debug(message: unknown): void {
    this.add('debug', message);
  }
  verbose(message: unknown): void {
    this.add('verbose', message);
  }
  fatal(message: unknown): void {
    this.add('fatal', message);
  }
}

/**
 * Boots a Nest application context with `StreamCoordinatorModule.forRoot` and, when `handle` is
 * given, one `@StreamShardHandler('orders')` provider (a fresh class per app, so apps in one
 * process share nothing).
 */
export async function startMemberApp(options: MemberAppOptions): Promise<MemberApp> {
  const handled: AppHandled[] = [];
  const logger = new CollectingLogger();
  const providers: Array<new (...args: never[]) => unknown> = [];
  const handle = options.handle;
  if (handle) {
    const work = handle;
    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders')
      async handle(
        message: StreamShardMessage<{ seq: number }>,
        context: StreamShardContext,
      ): Promise<void> {
        const t0 = preciseNow();
        await work(message, context);
        handled.push({
          memberId: context.memberId,
          shard: message.shard,
          key: message.key,
          id: message.id,
          seq: message.payload.seq,
          deliveryCount: message.deliveryCount,
          t0,
          t1: preciseNow(),
        });
      }
    }
    providers.push(OrdersHandler);
  }

  @Module({
    imports: [
      StreamCoordinatorModule.forRoot({
        coordinatorUrl: options.coordinatorUrl,
        token: TEST_TOKENS.member,
        redis: options.redis,
        group: options.group,
        logger,
        metrics: false,
        ...(options.memberId ? { memberId: options.memberId } : {}),
        ...options.module,
      }),
    ],
    providers,
  })
  class AppModule {}

  const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
  const runtime = app.get(MemberRuntime);
  const acks: AckRecord[] = [];
  app.get(MemberRuntimeEvents).onActivity(
    (activity) => {
      if (activity.acked) {
        acks.push({
          a: [...activity.acked.ids],
          m: runtime.status().memberId ?? '?',
          s: activity.shard.shard,
          t: preciseNow(),
          t0: wallClockOf(activity.acked.sentAt),
          st: activity.shard.stream,
        });
      }
    },
    { handled: false },
  );
  return { app, runtime, producer: app.get(StreamProducer), handled, acks, logs: logger.lines };
}
