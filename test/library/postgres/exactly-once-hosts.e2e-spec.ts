import {
  type CallHandler,
  Injectable,
  type LoggerService,
  Module,
  type NestInterceptor,
  Scope,
  type Type,
  UseInterceptors,
} from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  ShardMessage,
  type StreamShardMessage,
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import {
  ExactlyOnce,
  PgTransaction,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import type { PoolClient } from 'pg';
import { mergeMap, type Observable, tap, throwError, timeout } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { useExactlyOnceSuite } from './support/exactly-once-suite.js';
import { redisUrl } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { CapturingLogger } from '../../support/capturing-logger.js';

/** Token of the database URL a config module provides (as a `ConfigService` would). */
const DATABASE_URL = Symbol('DATABASE_URL');

// @ExactlyOnce() where the module and the handler are set up the ways applications do: the
// module registered through forRootAsync inside a feature module, a request-scoped host, and a
// global interceptor that times the call out (`timeout()` from rxjs) while its transaction may
// still commit. Each must write the entry's effect once and never ack a call whose transaction
// has not committed.
describe('e2e: @ExactlyOnce() with async registration, request scope and a global timeout', () => {
  const suite = useExactlyOnceSuite('eo-hosts', {
    streams: 'async:1,scoped:1,slow:1',
    heartbeatIntervalMs: 500,
    // one row per applied entry
    effectsDdl: 'CREATE TABLE effects (stream text NOT NULL, entry_id text NOT NULL)',
  });
  const { redis, keys } = suite;

  const coordinatorModule = (
    group: string,
    logger: LoggerService | false,
    maxDeliveries: number,
    initialDelayMs = 5,
  ) =>
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: suite.coordinator.url,
      token: TEST_TOKENS.member,
      redis: redisUrl(),
      group,
      logger,
      handlerDefaults: { maxDeliveries, retry: { initialDelayMs, maxDelayMs: initialDelayMs * 2 } },
    });

  async function publish(group: string, stream: string): Promise<string> {
    @Module({ imports: [coordinatorModule(group, false, 1)] })
    class PublisherModule {}
    const app = await Test.createTestingModule({ imports: [PublisherModule] }).compile();
    await app.init();
    try {
      return await app.get(StreamProducer).publish(stream, 'k', { n: 1 });
    } finally {
      await app.close();
    }
  }

  async function boot(root: Type): Promise<TestingModule> {
    const app = await Test.createTestingModule({ imports: [root] }).compile();
    await app.init();
    return app;
  }

  /** Entries pending in the group; -1 before a member created the consumer group. */
  const pending = async (stream: string, group: string): Promise<number> => {
    try {
      return Number(
        ((await redis.redis().xpending(keys.shardKey(stream, 0), group)) as unknown[])[0],
      );
    } catch (error) {
      if (String(error).includes('NOGROUP')) return -1;
      throw error;
    }
  };
  const deadLetters = async (stream: string): Promise<number> =>
    redis.redis().xlen(keys.deadLetterKey(stream));
  const effects = async (stream: string): Promise<string[]> =>
    (
      await suite.db.pool.query<{ entry_id: string }>(
        'SELECT entry_id FROM effects WHERE stream = $1 ORDER BY entry_id',
        [stream],
      )
    ).rows.map((row) => row.entry_id);

  /** Fails the call after the handler's transaction committed, `times` times. */
  const failAfterCommit = (times: number) => {
    let left = times;
    @Injectable()
    class FailAfterCommit implements NestInterceptor {
      intercept(_context: unknown, next: CallHandler): Observable<unknown> {
        return next
          .handle()
          .pipe(
            mergeMap((value) =>
              left-- > 0 ? throwError(() => new Error('failed after the commit')) : [value],
            ),
          );
      }
    }
    return FailAfterCommit;
  };

  it('forRootAsync in a feature module: transaction and dead-letter check both wired', async () => {
    const group = 'g-async';
    const calls: string[] = [];
    @Injectable()
    @UseInterceptors(failAfterCommit(1))
    class AsyncHandler {
      @StreamShardHandler('async')
      @ExactlyOnce()
      async handle(
        @ShardMessage() message: StreamShardMessage,
        @PgTransaction() tx: PoolClient,
      ): Promise<void> {
        calls.push(message.id);
        await tx.query("INSERT INTO effects VALUES ('async', $1)", [message.id]);
      }
    }
    @Module({
      providers: [{ provide: DATABASE_URL, useFactory: async () => suite.db.url }],
      exports: [DATABASE_URL],
    })
    class DatabaseConfigModule {}
    @Module({
      imports: [
        PostgresExactlyOnceModule.forRootAsync({
          imports: [DatabaseConfigModule],
          inject: [DATABASE_URL],
          useFactory: async (url: string) => ({ connectionString: url }),
        }),
      ],
      providers: [AsyncHandler],
    })
    class OrdersFeatureModule {}
    const logger = new CapturingLogger();
    // one delivery: the failure after the commit goes to the dead-letter decision at once
    @Module({ imports: [coordinatorModule(group, logger, 1), OrdersFeatureModule] })
    class AppModule {}
    const app = await boot(AppModule);
    try {
      const id = await publish(group, 'async');
      await waitFor(() => calls.length >= 1, { timeoutMs: 20_000, message: 'the handler call' });
      await waitFor(async () => (await pending('async', group)) === 0, {
        timeoutMs: 20_000,
        message: 'the entry to be settled',
      });
      expect(calls).toEqual([id]);
      expect(await effects('async')).toEqual([id]);
      expect(await deadLetters('async')).toBe(0);
      expect(logger.count(`entry ${id} was applied on an earlier delivery`)).toBe(1);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a request-scoped host: a redelivery after the commit is skipped', async () => {
    const group = 'g-scoped';
    const calls: string[] = [];
    const instances = new Set<object>();
    @Injectable({ scope: Scope.REQUEST })
    @UseInterceptors(failAfterCommit(1))
    class ScopedHandler {
      @StreamShardHandler('scoped')
      @ExactlyOnce()
      async handle(
        @ShardMessage() message: StreamShardMessage,
        @PgTransaction() tx: PoolClient,
      ): Promise<void> {
        instances.add(this);
        calls.push(message.id);
        await tx.query("INSERT INTO effects VALUES ('scoped', $1)", [message.id]);
      }
    }
    @Module({
      imports: [
        coordinatorModule(group, new CapturingLogger(), 3),
        PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url }),
      ],
      providers: [ScopedHandler],
    })
    class AppModule {}
    const app = await boot(AppModule);
    try {
      const id = await publish(group, 'scoped');
      await waitFor(() => calls.length >= 1, { timeoutMs: 20_000, message: 'the handler call' });
      await waitFor(async () => (await pending('scoped', group)) === 0, {
        timeoutMs: 20_000,
        message: 'the entry to be acknowledged',
      });
      // the second delivery found the entry applied: the handler ran once, on its own instance
      expect(calls).toEqual([id]);
      expect(instances.size).toBe(1);
      expect(await effects('scoped')).toEqual([id]);
      expect(await deadLetters('scoped')).toBe(0);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a global timeout interceptor: no ack while the timed-out transaction is open; one effect', async () => {
    const group = 'g-slow';
    const calls: string[] = [];
    let openGate!: () => void;
    const gate = new Promise<void>((resolve) => {
      openGate = resolve;
    });
    @Injectable()
    class SlowHandler {
      @StreamShardHandler('slow')
      @ExactlyOnce()
      async handle(
        @ShardMessage() message: StreamShardMessage,
        @PgTransaction() tx: PoolClient,
      ): Promise<void> {
        calls.push(message.id);
        await tx.query("INSERT INTO effects VALUES ('slow', $1)", [message.id]);
        // outlives the global timeout: the call fails while this transaction is still open
        await gate;
      }
    }
    let timedOut = 0;
    @Injectable()
    class TimeoutInterceptor implements NestInterceptor {
      intercept(_context: unknown, next: CallHandler): Observable<unknown> {
        return next.handle().pipe(timeout(300), tap({ error: () => void timedOut++ }));
      }
    }
    const logger = new CapturingLogger();
    @Module({
      imports: [
        coordinatorModule(group, logger, 10, 100),
        PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url }),
      ],
      providers: [SlowHandler, { provide: APP_INTERCEPTOR, useClass: TimeoutInterceptor }],
    })
    class AppModule {}
    const app = await boot(AppModule);
    try {
      const id = await publish(group, 'slow');
      await waitFor(() => timedOut >= 1, { timeoutMs: 20_000, message: 'the call to time out' });
      // timed out, its transaction still open: the library waits for the method before it counts
      // the failure, and nothing is committed or acknowledged meanwhile
      expect(logger.count(`handler failed for entry ${id}`)).toBe(0);
      expect(await pending('slow', group)).toBe(1);
      expect(await effects('slow')).toEqual([]);
      openGate();
      await waitFor(async () => (await pending('slow', group)) === 0, {
        timeoutMs: 20_000,
        message: 'the entry to be acknowledged after the commit',
      });
      // the timed-out call failed once the method returned; the retry waited for the row, found
      // the entry applied and acknowledged it without calling the handler
      expect(logger.count(`handler failed for entry ${id}`)).toBe(1);
      expect(calls).toEqual([id]);
      expect(await effects('slow')).toEqual([id]);
      expect(await deadLetters('slow')).toBe(0);
    } finally {
      openGate();
      await app.close();
    }
  }, 60_000);
});
