import { Injectable, type LoggerService, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  NonRetryableError,
  ShardMessage,
  type StartFrom,
  type StreamShardMessage,
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import {
  ExactlyOnce,
  PgTransaction,
  PostgresExactlyOnce,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import type { PoolClient } from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, TEST_TOKENS } from '../../support/coordinator-process.js';
import { useExactlyOnceSuite } from './support/exactly-once-suite.js';
import { redisUrl } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { CapturingLogger } from '../../support/capturing-logger.js';

// A group deleted and re-created under the same name while its members use @ExactlyOnce(), with a
// real coordinator, Redis, PostgreSQL and Nest apps. The offsets rows of the old incarnation stay
// in PostgreSQL (nothing deletes them), so the new incarnation inherits them: an entry whose
// effects the old one committed is never applied again — whether it is still pending (its member
// died between commit and ack), or read again because the Redis consumer group was reset — and
// every entry published while the group was gone or after it came back is applied exactly once.
describe('e2e: exactly-once across a group deleted and re-created', () => {
  const suite = useExactlyOnceSuite('eo-recreate', {
    streams: 'resumed:1,rewound:1,latest:1',
    heartbeatIntervalMs: 300,
    // one row per applied entry
    effectsDdl:
      'CREATE TABLE effects (stream text NOT NULL, n integer NOT NULL, entry_id text NOT NULL, incarnation integer NOT NULL)',
  });
  const { redis, keys } = suite;
  let api: CoordinatorApi;
  beforeAll(() => {
    api = new CoordinatorApi(suite.coordinator.url);
  });

  const coordinatorModule = (group: string, logger: LoggerService | false, startFrom?: StartFrom) =>
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: suite.coordinator.url,
      token: TEST_TOKENS.member,
      redis: redisUrl(),
      group,
      logger,
      handlerDefaults: {
        maxDeliveries: 3,
        retry: { initialDelayMs: 5, maxDelayMs: 50 },
        ...(startFrom ? { startFrom } : {}),
      },
    });

  /** Publishes through a publish-only app (no handler: it joins no group). */
  async function publish(stream: string, from: number, count: number): Promise<string[]> {
    @Module({ imports: [coordinatorModule('publisher', false)] })
    class PublisherModule {}
    const app = await Test.createTestingModule({ imports: [PublisherModule] }).compile();
    await app.init();
    try {
      const ids: string[] = [];
      for (let n = from; n < from + count; n++) {
        ids.push(await app.get(StreamProducer).publish(stream, `k${n}`, { n }));
      }
      return ids;
    } finally {
      await app.close();
    }
  }

  /**
   * A member app of `group` on `stream` for incarnation `incarnation`: writes one effect row per
   * entry through the transaction; the entry whose `n` is `poison` fails without retry.
   */
  async function member(options: {
    group: string;
    stream: string;
    incarnation: number;
    calls: number[];
    logger: LoggerService;
    poison?: number;
    startFrom?: StartFrom;
  }): Promise<TestingModule> {
    const { stream, incarnation, calls, poison } = options;
    @Injectable()
    class Handler {
      @StreamShardHandler(stream)
      @ExactlyOnce()
      async handle(
        @ShardMessage() message: StreamShardMessage<{ n: number }>,
        @PgTransaction() tx: PoolClient,
      ): Promise<void> {
        calls.push(message.payload.n);
        if (message.payload.n === poison) throw new NonRetryableError('poison entry');
        await tx.query('INSERT INTO effects VALUES ($1, $2, $3, $4)', [
          stream,
          message.payload.n,
          message.id,
          incarnation,
        ]);
      }
    }
    @Module({
      imports: [
        coordinatorModule(options.group, options.logger, options.startFrom),
        PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url, maxConnections: 2 }),
      ],
      providers: [Handler],
    })
    class AppModule {}
    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    return app;
  }

  const shardKey = (stream: string): string => keys.shardKey(stream, 0);
  const pending = async (stream: string, group: string): Promise<number> =>
    Number(((await redis.redis().xpending(shardKey(stream), group)) as unknown[])[0]);
  const deadLetters = async (stream: string): Promise<string[]> =>
    (await redis.redis().xrange(keys.deadLetterKey(stream), '-', '+')).map(
      ([, fields]) => fields[fields.indexOf('id') + 1] ?? '',
    );
  /** Effect rows per `n` of `stream`: `n` → incarnations that applied it. */
  async function effects(stream: string): Promise<Map<number, number[]>> {
    const { rows } = await suite.db.pool.query<{ n: number; incarnation: number }>(
      'SELECT n, incarnation FROM effects WHERE stream = $1 ORDER BY n, incarnation',
      [stream],
    );
    const byN = new Map<number, number[]>();
    for (const row of rows) byN.set(row.n, [...(byN.get(row.n) ?? []), row.incarnation]);
    return byN;
  }
  const appliedCount = async (stream: string): Promise<number> =>
    [...(await effects(stream)).values()].reduce((sum, list) => sum + list.length, 0);

  /** Deletes the (empty) group through the admin API, waiting for its last member to leave. */
  async function deleteGroup(group: string): Promise<void> {
    let status = 0;
    await waitFor(
      async () => {
        status = (await api.delete(`/v1/groups/${group}`)).status;
        return status === 204;
      },
      { timeoutMs: 15_000, intervalMs: 50, message: `group ${group} to be deleted` },
    );
    expect((await api.get(`/v1/groups/${group}`)).status).toBe(404);
  }

  /**
   * The old incarnation: applies entries 0..3 and leaves; then a member that committed entry 4 and
   * died before acking it (its transaction recorded through the library, the entry left pending
   * for the consumer `ghost`). Returns every entry id.
   */
  async function firstIncarnation(group: string, stream: string): Promise<string[]> {
    const calls: number[] = [];
    const app = await member({
      group,
      stream,
      incarnation: 1,
      calls,
      logger: new CapturingLogger(),
    });
    const ids = await publish(stream, 0, 4);
    try {
      await waitFor(
        async () => (await appliedCount(stream)) === 4 && (await pending(stream, group)) === 0,
        {
          timeoutMs: 20_000,
          message: 'the first incarnation to apply and ack entries 0..3',
        },
      );
    } finally {
      await app.close();
    }
    const [crashed] = await publish(stream, 4, 1);
    const r = redis.redis();
    await r.xreadgroup('GROUP', group, 'ghost', 'COUNT', 10, 'STREAMS', shardKey(stream), '>');
    const result = await new PostgresExactlyOnce({ pool: suite.db.pool }).apply(
      { group, stream, shard: 0, id: crashed!, memberId: 'ghost' },
      async (tx) => {
        await tx.query('INSERT INTO effects VALUES ($1, $2, $3, $4)', [stream, 4, crashed, 1]);
      },
    );
    expect(result.applied).toBe(true);
    expect(await pending(stream, group)).toBe(1);
    return [...ids, crashed!];
  }

  it('resumed: the committed pending entry is skipped, later entries applied once', async () => {
    const group = 'g-resumed';
    const stream = 'resumed';
    await firstIncarnation(group, stream);
    await deleteGroup(group);
    await publish(stream, 5, 2); // written while the group does not exist

    const calls: number[] = [];
    const logger = new CapturingLogger();
    const app = await member({ group, stream, incarnation: 2, calls, logger });
    try {
      await publish(stream, 7, 3); // after the re-creation
      await waitFor(
        async () => (await appliedCount(stream)) >= 10 && (await pending(stream, group)) === 0,
        {
          timeoutMs: 20_000,
          message: 'entries 5..9 to be applied and every entry acknowledged',
        },
      );
      const byN = await effects(stream);
      expect([...byN.entries()]).toEqual([
        [0, [1]],
        [1, [1]],
        [2, [1]],
        [3, [1]],
        [4, [1]],
        [5, [2]],
        [6, [2]],
        [7, [2]],
        [8, [2]],
        [9, [2]],
      ]);
      // entry 4, pending since its member died after the commit, came back to the new
      // incarnation (nothing is pending now) and was acknowledged without a handler call
      expect(calls.sort((a, b) => a - b)).toEqual([5, 6, 7, 8, 9]);
      expect(await deadLetters(stream)).toEqual([]);
    } finally {
      await app.close();
    }
  }, 90_000);

  it('rewound: a consumer group reset re-reads old entries, none applied twice', async () => {
    const group = 'g-rewound';
    const stream = 'rewound';
    // the old incarnation: 0..2 applied, 3 dead-lettered (the last entry it settled)
    const calls1: number[] = [];
    const app1 = await member({
      group,
      stream,
      incarnation: 1,
      calls: calls1,
      logger: new CapturingLogger(),
      poison: 3,
    });
    let poisonId: string;
    try {
      const ids = await publish(stream, 0, 4);
      poisonId = ids[3]!;
      await waitFor(
        async () =>
          (await deadLetters(stream)).length === 1 && (await pending(stream, group)) === 0,
        {
          timeoutMs: 20_000,
          message: 'the first incarnation to apply 0..2 and dead-letter 3',
        },
      );
    } finally {
      await app1.close();
    }
    expect(await appliedCount(stream)).toBe(3);
    await deleteGroup(group);
    // the Redis consumer group is reset (by hand, or lost with Redis's data): the new incarnation
    // starts from the shard's first entry
    await redis.redis().xgroup('DESTROY', shardKey(stream), group);

    const calls: number[] = [];
    const logger = new CapturingLogger();
    const app = await member({
      group,
      stream,
      incarnation: 2,
      calls,
      logger,
      poison: 3,
      startFrom: 'earliest',
    });
    try {
      await publish(stream, 4, 3);
      await waitFor(
        async () => (await appliedCount(stream)) >= 6 && (await pending(stream, group)) === 0,
        {
          timeoutMs: 20_000,
          message: 'entries 4..6 to be applied and every entry acknowledged',
        },
      );
      const byN = await effects(stream);
      expect([...byN.entries()]).toEqual([
        [0, [1]],
        [1, [1]],
        [2, [1]],
        [4, [2]],
        [5, [2]],
        [6, [2]],
      ]);
      expect(calls.sort((a, b) => a - b)).toEqual([4, 5, 6]);
      // entry 3 is the last one the old incarnation settled, as a dead letter: re-read, it cannot
      // be told from one whose dead letter was never written, so it is dead-lettered again
      // (never applied); entries before it are skipped as applied
      // (the second dead letter also shows the shard was read again from its first entry)
      expect(await deadLetters(stream)).toEqual([poisonId!, poisonId!]);
    } finally {
      await app.close();
    }
  }, 90_000);

  it('latest: a reset consumer group starting at new entries applies each of them once', async () => {
    const group = 'g-latest';
    const stream = 'latest';
    await firstIncarnation(group, stream);
    await deleteGroup(group);
    await redis.redis().xgroup('DESTROY', shardKey(stream), group);

    const calls: number[] = [];
    const app = await member({
      group,
      stream,
      incarnation: 2,
      calls,
      logger: new CapturingLogger(),
      startFrom: 'latest',
    });
    try {
      await waitFor(
        async () =>
          ((await redis.redis().xinfo('GROUPS', shardKey(stream))) as unknown[]).length > 0,
        {
          timeoutMs: 20_000,
          message: 'the new incarnation to create its consumer group',
        },
      );
      await publish(stream, 5, 3);
      await waitFor(
        async () => (await appliedCount(stream)) >= 8 && (await pending(stream, group)) === 0,
        {
          timeoutMs: 20_000,
          message: 'entries 5..7 to be applied',
        },
      );
      const byN = await effects(stream);
      expect([...byN.entries()]).toEqual([
        [0, [1]],
        [1, [1]],
        [2, [1]],
        [3, [1]],
        [4, [1]],
        [5, [2]],
        [6, [2]],
        [7, [2]],
      ]);
      expect(calls.sort((a, b) => a - b)).toEqual([5, 6, 7]);
    } finally {
      await app.close();
    }
  }, 90_000);
});
