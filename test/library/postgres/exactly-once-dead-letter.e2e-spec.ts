import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type LoggerService,
  Module,
  type NestInterceptor,
  type Type,
  UseInterceptors,
} from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  type StreamShardMessage,
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import {
  ExactlyOnce,
  PostgresExactlyOnce,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import { catchError, from, mergeMap, type Observable, throwError } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { useExactlyOnceSuite } from './support/exactly-once-suite.js';
import { redisUrl } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { CapturingLogger } from '../../support/capturing-logger.js';

// Dead letters of @ExactlyOnce() handlers against a real Redis, a real PostgreSQL and a real
// Nest app: an entry whose effects are already committed (the offsets table records it) is
// acknowledged instead of dead-lettered — past maxDeliveries, or failing on its last delivery
// after the commit — and one whose state cannot be checked (PostgreSQL unreachable) stays
// pending, neither acknowledged nor dead-lettered. The dead-letter decision is fenced in the
// offsets table (issue #20): a zombie owner's late attempt at an entry the new owner dead-lettered
// writes nothing, so no entry is both applied and dead-lettered.
describe('e2e: dead letters of exactly-once handlers', () => {
  const suite = useExactlyOnceSuite('eo-dead-letter', {
    streams: 'past:1,late:1,down:1,zombie:1,held:1,settled:1',
    heartbeatIntervalMs: 500,
    // one row per applied entry
    effectsDdl: 'CREATE TABLE effects (stream text NOT NULL, entry_id text NOT NULL)',
  });
  const { redis, keys } = suite;

  const coordinatorModule = (group: string, logger: LoggerService | false, maxDeliveries = 2) =>
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: suite.coordinator.url,
      token: TEST_TOKENS.member,
      redis: redisUrl(),
      group,
      logger,
      handlerDefaults: { maxDeliveries, retry: { initialDelayMs: 5, maxDelayMs: 50 } },
    });

  /** Publishes through a publish-only app (no handler: it joins no group). */
  async function publish(group: string, stream: string, count: number): Promise<string[]> {
    @Module({ imports: [coordinatorModule(group, false)] })
    class PublisherModule {}
    const app = await Test.createTestingModule({ imports: [PublisherModule] }).compile();
    await app.init();
    try {
      const ids: string[] = [];
      for (let n = 0; n < count; n++) {
        ids.push(await app.get(StreamProducer).publish(stream, `k${n}`, { n }));
      }
      return ids;
    } finally {
      await app.close();
    }
  }

  async function boot(
    group: string,
    handler: Type,
    postgresUrl: string,
    logger: LoggerService,
    maxDeliveries = 2,
  ): Promise<TestingModule> {
    @Module({
      imports: [
        coordinatorModule(group, logger, maxDeliveries),
        PostgresExactlyOnceModule.forRoot({ connectionString: postgresUrl }),
      ],
      providers: [handler],
    })
    class AppModule {}
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    return app;
  }

  const pending = async (stream: string, group: string): Promise<number> =>
    Number(((await redis.redis().xpending(keys.shardKey(stream, 0), group)) as unknown[])[0]);
  const deadLetterIds = async (stream: string): Promise<string[]> =>
    (await redis.redis().xrange(keys.deadLetterKey(stream), '-', '+')).map(
      ([, fields]) => fields[fields.indexOf('id') + 1] ?? '',
    );

  it('past maxDeliveries: acks an entry already applied, dead-letters one not applied', async () => {
    const group = 'g-past';
    const [applied, notApplied] = await publish(group, 'past', 2);
    // both delivered to a member that crashed before acking, over and over: 5 deliveries each
    const key = keys.shardKey('past', 0);
    const r = redis.redis();
    await r.xgroup('CREATE', key, group, '0');
    await r.xreadgroup('GROUP', group, 'ghost', 'COUNT', 10, 'STREAMS', key, '>');
    await r.xclaim(key, group, 'ghost', 0, applied!, notApplied!, 'RETRYCOUNT', 5);
    // the first one's effects were committed: the offsets table records it
    const [ms, seq] = applied!.split('-');
    await suite.db.pool.query(
      'INSERT INTO rsc_applied_offsets (consumer_group, stream, shard, last_ms, last_seq) VALUES ($1, $2, 0, $3, $4)',
      [group, 'past', ms, seq],
    );

    const calls: string[] = [];
    @Injectable()
    class PastHandler {
      @StreamShardHandler('past')
      @ExactlyOnce()
      async handle(message: StreamShardMessage): Promise<void> {
        calls.push(message.id);
      }
    }
    const logger = new CapturingLogger();
    const app = await boot(group, PastHandler, suite.db.url, logger);
    try {
      await waitFor(async () => (await deadLetterIds('past')).length >= 1, {
        timeoutMs: 15_000,
        message: 'the entry not applied to be dead-lettered',
      });
      await waitFor(async () => (await pending('past', group)) === 0, {
        timeoutMs: 15_000,
        message: 'both entries to leave the pending list',
      });
      expect(await deadLetterIds('past')).toEqual([notApplied]);
      expect(calls).toEqual([]);
      expect(logger.count(`entry ${applied} was applied on an earlier delivery`)).toBe(1);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('a failure on the last delivery after the commit: acked, not dead-lettered', async () => {
    const group = 'g-late';
    /** Fails the call after the handler's transaction committed (it runs outside it). */
    @Injectable()
    class FailAfterCommit implements NestInterceptor {
      intercept(_context: unknown, next: CallHandler): Observable<unknown> {
        return next
          .handle()
          .pipe(mergeMap(() => throwError(() => new Error('failed after the commit'))));
      }
    }
    const calls: string[] = [];
    @Injectable()
    @UseInterceptors(FailAfterCommit)
    class LateHandler {
      @StreamShardHandler('late')
      @ExactlyOnce()
      async handle(message: StreamShardMessage): Promise<void> {
        calls.push(message.id);
      }
    }
    const logger = new CapturingLogger();
    const app = await boot(group, LateHandler, suite.db.url, logger, 1);
    try {
      const [id] = await publish(group, 'late', 1);
      await waitFor(() => logger.count(`handler failed for entry ${id}`) >= 1, {
        timeoutMs: 15_000,
        message: 'the handler call to fail after its commit',
      });
      await waitFor(async () => (await pending('late', group)) === 0, {
        timeoutMs: 15_000,
        message: 'the entry to leave the pending list',
      });
      expect(calls).toEqual([id]);
      expect(await deadLetterIds('late')).toEqual([]);
      expect(logger.count(`entry ${id} was applied on an earlier delivery`)).toBe(1);
      const offsets = await suite.db.pool.query<{ last: string }>(
        "SELECT last_ms::text || '-' || last_seq::text AS last FROM rsc_applied_offsets WHERE consumer_group = $1",
        [group],
      );
      expect(offsets.rows.map((row) => row.last)).toEqual([id]);
    } finally {
      await app.close();
    }
  }, 60_000);

  it('PostgreSQL unreachable at the dead-letter decision: neither acked nor dead-lettered', async () => {
    const group = 'g-down';
    @Injectable()
    class DownHandler {
      @StreamShardHandler('down')
      @ExactlyOnce()
      async handle(): Promise<void> {
        // never reached: the transaction cannot begin
      }
    }
    const logger = new CapturingLogger();
    // nothing listens on port 1: every connection attempt is refused
    const app = await boot(group, DownHandler, 'postgres://127.0.0.1:1/test', logger, 1);
    let closed = false;
    try {
      const [id] = await publish(group, 'down', 1);
      // the check is tried again and again, each time leaving the entry where it is
      await waitFor(() => logger.count(`could not check whether entry ${id} was applied`) >= 3, {
        timeoutMs: 20_000,
        message: 'three failed checks',
      });
      expect(await deadLetterIds('down')).toEqual([]);
      expect(await pending('down', group)).toBe(1);
      // the loop ends with the shard: shutdown is not held up by it
      await app.close();
      closed = true;
      expect(await deadLetterIds('down')).toEqual([]);
      expect(await pending('down', group)).toBe(1);
    } finally {
      if (!closed) await app.close();
    }
  }, 60_000);

  const effects = async (stream: string): Promise<string[]> =>
    (
      await suite.db.pool.query<{ entry_id: string }>(
        'SELECT entry_id FROM effects WHERE stream = $1 ORDER BY entry_id',
        [stream],
      )
    ).rows.map((row) => row.entry_id);

  it('issue #20: a zombie that wakes after the new owner dead-lettered the entry writes nothing', async () => {
    const group = 'g-zombie';
    // the new owner: its downstream is down, so every delivery fails and the entry runs out
    const calls: string[] = [];
    @Injectable()
    class NewOwner {
      @StreamShardHandler('zombie')
      @ExactlyOnce()
      async handle(message: StreamShardMessage): Promise<void> {
        calls.push(message.id);
        throw new Error('downstream unavailable');
      }
    }
    const logger = new CapturingLogger();
    const app = await boot(group, NewOwner, suite.db.url, logger, 2);
    // the zombie: an old owner that had the entry in hand, its handler call started but its
    // transaction not yet at the offset row when it froze (SIGSTOP, a long GC)
    const zombie = new PostgresExactlyOnce({ connectionString: suite.db.url, maxConnections: 1 });
    try {
      const [id] = await publish(group, 'zombie', 1);
      await waitFor(async () => (await deadLetterIds('zombie')).length >= 1, {
        timeoutMs: 15_000,
        message: 'the new owner to dead-letter the entry',
      });
      await waitFor(async () => (await pending('zombie', group)) === 0, {
        timeoutMs: 15_000,
        message: 'the entry to leave the pending list',
      });
      expect(calls).toEqual([id, id]);
      // the zombie wakes and carries on with the entry
      const attempt = await zombie
        .apply({ group, stream: 'zombie', shard: 0, id: id!, memberId: 'zombie' }, async (tx) => {
          await tx.query("INSERT INTO effects (stream, entry_id) VALUES ('zombie', $1)", [id]);
        })
        .then(
          (outcome) => (outcome.applied ? 'applied' : 'skipped'),
          (error: unknown) => (error as Error).name,
        );
      // dead-lettered and not applied; never both (replaying the dead letter would apply it twice)
      expect(await effects('zombie')).toEqual([]);
      expect(await deadLetterIds('zombie')).toEqual([id]);
      expect(attempt).toBe('ExactlyOnceEntryDeadLetteredError');
    } finally {
      await zombie.close();
      await app.close();
    }
  }, 60_000);

  it('a zombie holding the offset row when the new owner gives up: its commit is waited for, no dead letter', async () => {
    const group = 'g-held';
    const zombie = new PostgresExactlyOnce({ connectionString: suite.db.url, maxConnections: 1 });
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let zombiePid: number | undefined;
    /**
     * Outside the new owner's transaction (rolled back by then): on its failed last delivery, lets
     * the zombie lock the row and hold it mid-handler, then fails the call.
     */
    @Injectable()
    class ZombieTakesTheRow implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
        const message = context.getArgByIndex<StreamShardMessage>(0);
        return next.handle().pipe(
          catchError((error: unknown) =>
            from(
              new Promise<never>((_resolve, reject) => {
                void zombie.apply(
                  { group, stream: 'held', shard: 0, id: message.id, memberId: 'zombie' },
                  async (tx) => {
                    const { rows } = await tx.query<{ pid: number }>(
                      'SELECT pg_backend_pid() AS pid',
                    );
                    zombiePid = rows[0]!.pid;
                    reject(error as Error);
                    await released;
                    await tx.query("INSERT INTO effects (stream, entry_id) VALUES ('held', $1)", [
                      message.id,
                    ]);
                  },
                );
              }),
            ),
          ),
        );
      }
    }
    @Injectable()
    @UseInterceptors(ZombieTakesTheRow)
    class NewOwner {
      @StreamShardHandler('held')
      @ExactlyOnce()
      async handle(): Promise<void> {
        throw new Error('downstream unavailable');
      }
    }
    const logger = new CapturingLogger();
    const app = await boot(group, NewOwner, suite.db.url, logger, 1);
    try {
      const [id] = await publish(group, 'held', 1);
      // the new owner's dead-letter decision waits for the zombie's row lock
      await waitFor(
        async () => {
          if (zombiePid === undefined) return false;
          const { rows } = await suite.db.pool.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [zombiePid],
          );
          return rows[0]!.n > 0;
        },
        { timeoutMs: 15_000, message: "the new owner's decision to wait for the zombie's row" },
      );
      expect(await deadLetterIds('held')).toEqual([]);
      release();
      await waitFor(async () => (await pending('held', group)) === 0, {
        timeoutMs: 15_000,
        message: 'the entry to leave the pending list',
      });
      expect(await effects('held')).toEqual([id]);
      expect(await deadLetterIds('held')).toEqual([]);
      expect(logger.count(`entry ${id} was applied on an earlier delivery`)).toBe(1);
    } finally {
      release();
      await zombie.close();
      await app.close();
    }
  }, 60_000);

  it('an entry settled as a dead letter and delivered again (crash before the dead letter) is dead-lettered, not skipped', async () => {
    const group = 'g-settled';
    const [settled, next] = await publish(group, 'settled', 2);
    const key = keys.shardKey('settled', 0);
    const r = redis.redis();
    await r.xgroup('CREATE', key, group, '0');
    await r.xreadgroup('GROUP', group, 'ghost', 'COUNT', 1, 'STREAMS', key, '>');
    // the member settled the first entry as a dead letter in PostgreSQL, then died before writing
    // the dead letter to Redis: the entry is still pending
    const [ms, seq] = settled!.split('-');
    await suite.db.pool.query(
      'INSERT INTO rsc_applied_offsets (consumer_group, stream, shard, last_ms, last_seq, dead_lettered_id) VALUES ($1, $2, 0, $3, $4, $5)',
      [group, 'settled', ms, seq, settled],
    );
    const calls: string[] = [];
    @Injectable()
    class SettledHandler {
      @StreamShardHandler('settled')
      @ExactlyOnce()
      async handle(message: StreamShardMessage): Promise<void> {
        calls.push(message.id);
      }
    }
    const logger = new CapturingLogger();
    const app = await boot(group, SettledHandler, suite.db.url, logger, 5);
    try {
      await waitFor(async () => (await deadLetterIds('settled')).length >= 1, {
        timeoutMs: 15_000,
        message: 'the settled entry to be dead-lettered',
      });
      await waitFor(async () => (await pending('settled', group)) === 0, {
        timeoutMs: 15_000,
        message: 'both entries to leave the pending list',
      });
      // not handed to the handler, not skipped as applied: dead-lettered at once; the next applied
      expect(await deadLetterIds('settled')).toEqual([settled]);
      expect(calls).toEqual([next]);
      const { rows } = await suite.db.pool.query<{ last: string; dead_lettered_id: string }>(
        "SELECT last_ms::text || '-' || last_seq::text AS last, dead_lettered_id FROM rsc_applied_offsets WHERE consumer_group = $1",
        [group],
      );
      expect(rows).toEqual([{ last: next, dead_lettered_id: settled }]);
    } finally {
      await app.close();
    }
  }, 60_000);
});
