import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  Module,
  type NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ShardMessage,
  type StreamShardMessage,
  StreamCoordinatorModule,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import {
  ExactlyOnce,
  PgTransaction,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import type { PoolClient } from 'pg';
import { type Observable, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { useExactlyOnceSuite } from './support/exactly-once-suite.js';
import { redisUrl } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

/** Reads the payload after the handler resolved (a metrics or audit interceptor would). */
@Injectable()
class ReadsPayloadAfterwards implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const message = context.getArgByIndex<StreamShardMessage<{ amount?: number }>>(0);
    return next.handle().pipe(tap(() => void message.payload.amount));
  }
}

// An exactly-once handler that routes on the key only commits its effects; an outer interceptor
// then reads the payload, which does not decode, and the call fails after the commit. Every other
// failure after the commit goes through the dead-letter decision (docs/exactly-once.md); an
// undecodable payload must too, or the entry ends up applied and dead-lettered.
describe('e2e: an undecodable payload read after an exactly-once commit', () => {
  const suite = useExactlyOnceSuite('eo-undecodable', {
    streams: 'raw:1',
    heartbeatIntervalMs: 500,
    // one row per applied entry
    effectsDdl: 'CREATE TABLE effects (entry_id text NOT NULL, key text NOT NULL)',
  });
  const { redis, keys } = suite;

  it('is acknowledged as applied, not dead-lettered', async () => {
    const group = 'g-raw';
    const calls: string[] = [];
    @Injectable()
    @UseInterceptors(ReadsPayloadAfterwards)
    class KeyOnlyHandler {
      @StreamShardHandler('raw')
      @ExactlyOnce()
      async handle(
        @ShardMessage() message: StreamShardMessage,
        @PgTransaction() tx: PoolClient,
      ): Promise<void> {
        calls.push(message.id);
        await tx.query('INSERT INTO effects VALUES ($1, $2)', [message.id, message.key]);
      }
    }
    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: suite.coordinator.url,
          token: TEST_TOKENS.member,
          redis: redisUrl(),
          group,
          logger: false,
          handlerDefaults: { maxDeliveries: 3, retry: { initialDelayMs: 5, maxDelayMs: 10 } },
        }),
        PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url }),
      ],
      providers: [KeyOnlyHandler],
    })
    class AppModule {}
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    try {
      const shardKey = keys.shardKey('raw', 0);
      const id = (await redis
        .redis()
        .xadd(shardKey, '*', 'key', 'customer-1', 'payload', 'not json{')) as string;
      await waitFor(() => calls.length >= 1, { timeoutMs: 20_000, message: 'the handler call' });
      await waitFor(
        async () => Number(((await redis.redis().xpending(shardKey, group)) as unknown[])[0]) === 0,
        { timeoutMs: 20_000, message: 'the entry to be settled' },
      );
      const effects = await suite.db.pool.query<{ entry_id: string }>(
        'SELECT entry_id FROM effects',
      );
      expect(effects.rows.map((row) => row.entry_id)).toEqual([id]);
      // applied once, so not a dead letter (a replay would apply it a second time)
      expect(await redis.redis().xlen(keys.deadLetterKey('raw'))).toBe(0);
      expect(calls).toEqual([id]);
    } finally {
      await app.close();
    }
  }, 60_000);
});
