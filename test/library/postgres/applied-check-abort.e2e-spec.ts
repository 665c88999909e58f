import { Injectable, type LoggerService, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import {
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { ExactlyOnce, PostgresExactlyOnceModule } from '@redis-stream-coordinator/nestjs/postgres';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { useExactlyOnceSuite } from './support/exactly-once-suite.js';
import { redisUrl } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { CapturingLogger } from '../../support/capturing-logger.js';

/** The server's `lock_timeout` for the applied check (postgres-applied-entry-check.ts). */
const LOCK_TIMEOUT_MS = 5000;

// The dead-letter decision of an exactly-once handler reads the offsets table, locking the
// shard's row. When another transaction holds that row, the read waits up to its lock_timeout
// (5 s). A shutdown (or a revoke: the same reader stop) during that wait must not be held up by
// it: the check gives up at once, its answer unknown, so the entry is neither acknowledged nor
// dead-lettered; it stays pending for the next owner.
describe('e2e: the applied check gives up when the reader stops', () => {
  const suite = useExactlyOnceSuite('eo-check-abort', {
    streams: 'held:1,moved:2',
    heartbeatIntervalMs: 300,
  });
  const { redis, keys } = suite;

  const coordinatorModule = (group: string, logger: LoggerService | false) =>
    StreamCoordinatorModule.forRoot({
      coordinatorUrl: suite.coordinator.url,
      token: TEST_TOKENS.member,
      redis: redisUrl(),
      group,
      logger,
      handlerDefaults: { maxDeliveries: 2, retry: { initialDelayMs: 5, maxDelayMs: 50 } },
    });

  it('a shutdown during a check blocked on a held row lock ends promptly; the entry stays pending', async () => {
    const group = 'g-held';
    @Module({ imports: [coordinatorModule(group, false)] })
    class PublisherModule {}
    const publisher = await Test.createTestingModule({ imports: [PublisherModule] }).compile();
    await publisher.init();
    const id = await publisher.get(StreamProducer).publish('held', 'k', { n: 1 });
    await publisher.close();

    // delivered past maxDeliveries to a member that crashed before acking: the next owner goes
    // straight to the dead-letter decision, which reads the offsets table
    const key = keys.shardKey('held', 0);
    const r = redis.redis();
    await r.xgroup('CREATE', key, group, '0');
    await r.xreadgroup('GROUP', group, 'ghost', 'COUNT', 10, 'STREAMS', key, '>');
    await r.xclaim(key, group, 'ghost', 0, id, 'RETRYCOUNT', 5);

    // another transaction holds the shard's offset row (an owner frozen mid-commit)
    const holder: pg.PoolClient = await suite.db.pool.connect();
    let holding = true;
    const release = async (): Promise<void> => {
      if (!holding) return;
      holding = false;
      await holder.query('ROLLBACK');
      holder.release();
    };
    try {
      await holder.query(
        "INSERT INTO rsc_applied_offsets (consumer_group, stream, shard, last_ms, last_seq) VALUES ($1, 'held', 0, 0, 0)",
        [group],
      );
      await holder.query('BEGIN');
      await holder.query(
        "SELECT 1 FROM rsc_applied_offsets WHERE consumer_group = $1 AND stream = 'held' AND shard = 0 FOR UPDATE",
        [group],
      );
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))
        .rows[0]!.pid;

      const calls: string[] = [];
      @Injectable()
      class HeldHandler {
        @StreamShardHandler('held')
        @ExactlyOnce()
        async handle(): Promise<void> {
          calls.push('called');
        }
      }
      const logger = new CapturingLogger();
      @Module({
        imports: [
          coordinatorModule(group, logger),
          PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url }),
        ],
        providers: [HeldHandler],
      })
      class AppModule {}
      const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
      await app.init();
      let closeMs: number;
      try {
        // the check is waiting for the row: a backend blocked by the holder
        await waitFor(
          async () =>
            (
              await suite.db.pool.query<{ n: number }>(
                'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
                [holderPid],
              )
            ).rows[0]!.n >= 1,
          { timeoutMs: 20_000, message: 'the applied check to wait for the held row' },
        );
      } finally {
        const started = Date.now();
        await app.close();
        closeMs = Date.now() - started;
      }
      // without giving up, the close waits for the check's lock_timeout, which then fails it
      expect(logger.count(`could not check whether entry ${id} was applied`)).toBe(0);
      expect(closeMs).toBeLessThan(LOCK_TIMEOUT_MS - 1000);
      expect(calls).toEqual([]);
      expect(Number(((await r.xpending(key, group)) as unknown[])[0])).toBe(1);
      expect(await r.xlen(keys.deadLetterKey('held'))).toBe(0);
      expect(logger.count(`entry ${id} was applied on an earlier delivery`)).toBe(0);
    } finally {
      await release();
    }
  }, 60_000);

  it('a revoke during a check blocked on a held row lock hands the shard over promptly; nothing settled', async () => {
    const group = 'g-moved';
    @Module({ imports: [coordinatorModule(group, false)] })
    class PublisherModule {}
    const publisher = await Test.createTestingModule({ imports: [PublisherModule] }).compile();
    await publisher.init();
    const r = redis.redis();
    const shardKeys = [keys.shardKey('moved', 0), keys.shardKey('moved', 1)];
    for (const key of shardKeys) await r.xgroup('CREATE', key, group, '0', 'MKSTREAM');
    // an entry on each shard
    for (
      let n = 0;
      n < 64 && (await Promise.all(shardKeys.map((k) => r.xlen(k)))).includes(0);
      n++
    ) {
      await publisher.get(StreamProducer).publish('moved', `k${n}`, { n });
    }
    await publisher.close();
    // every entry delivered past maxDeliveries to a member that crashed before acking
    let entries = 0;
    for (const key of shardKeys) {
      const ids = (await r.xrange(key, '-', '+')).map(([id]) => id);
      entries += ids.length;
      await r.xreadgroup('GROUP', group, 'ghost', 'COUNT', 100, 'STREAMS', key, '>');
      await r.xclaim(key, group, 'ghost', 0, ...ids, 'RETRYCOUNT', 5);
    }
    const pendingTotal = async (): Promise<number> => {
      let total = 0;
      for (const key of shardKeys)
        total += Number(((await r.xpending(key, group)) as unknown[])[0]);
      return total;
    };

    // another transaction holds both shards' offset rows
    const holder: pg.PoolClient = await suite.db.pool.connect();
    const apps: TestingModule[] = [];
    try {
      await holder.query(
        "INSERT INTO rsc_applied_offsets (consumer_group, stream, shard, last_ms, last_seq) VALUES ($1, 'moved', 0, 0, 0), ($1, 'moved', 1, 0, 0)",
        [group],
      );
      await holder.query('BEGIN');
      await holder.query(
        "SELECT 1 FROM rsc_applied_offsets WHERE consumer_group = $1 AND stream = 'moved' FOR UPDATE",
        [group],
      );
      const holderPid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))
        .rows[0]!.pid;
      const blocked = async (): Promise<number> =>
        (
          await suite.db.pool.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
            [holderPid],
          )
        ).rows[0]!.n;

      const calls: string[] = [];
      @Injectable()
      class MovedHandler {
        @StreamShardHandler('moved')
        @ExactlyOnce()
        async handle(): Promise<void> {
          calls.push('called');
        }
      }
      const start = async (): Promise<{ app: TestingModule; runtime: MemberRuntime }> => {
        @Module({
          imports: [
            coordinatorModule(group, false),
            PostgresExactlyOnceModule.forRoot({ connectionString: suite.db.url }),
          ],
          providers: [MovedHandler],
        })
        class AppModule {}
        const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
        apps.push(app);
        await app.init();
        return { app, runtime: app.get(MemberRuntime) };
      };

      const a = await start();
      await waitFor(async () => a.runtime.status().held.length === 2 && (await blocked()) === 2, {
        timeoutMs: 20_000,
        message: 'a to hold both shards, each check waiting for its held row',
      });
      const checksWaiting = Date.now();
      const b = await start();
      await waitFor(
        () => a.runtime.status().held.length === 1 && b.runtime.status().held.length === 1,
        { timeoutMs: 20_000, intervalMs: 20, message: 'one shard to move from a to b' },
      );
      // without giving up, a's revoke waits for its check's lock_timeout, counted from when the
      // check began to wait (before checksWaiting)
      expect(Date.now() - checksWaiting).toBeLessThan(LOCK_TIMEOUT_MS - 1000);
      expect(calls).toEqual([]);
      expect(await pendingTotal()).toBe(entries);
      expect(await r.xlen(keys.deadLetterKey('moved'))).toBe(0);
    } finally {
      for (const app of apps.reverse()) await app.close();
      await holder.query('ROLLBACK');
      holder.release();
    }
    expect(await pendingTotal()).toBe(entries);
    expect(await r.xlen(keys.deadLetterKey('moved'))).toBe(0);
  }, 90_000);
});
