import { performance } from 'node:perf_hooks';
import pg from 'pg';
import {
  createExactlyOnceTable,
  PostgresExactlyOnce,
} from '@redis-stream-coordinator/nestjs/postgres';
import { createTestSchema } from '../test/support/postgres-schema.js';

/**
 * `npm run bench:exactly-once` (not in CI): the cost of `@ExactlyOnce()` on PostgreSQL. 8 shards
 * handled concurrently, each one message after another as a member does, every message inserting
 * one effect row: once as a plain handler (one autocommit INSERT), once through
 * `PostgresExactlyOnce.apply` (BEGIN, lock the offset row, INSERT, record the id, COMMIT). It
 * measures the database side only — the Redis read and ack are the same for both and are
 * measured by `npm run bench`. BENCH_EO_MESSAGES (per shard, default 2000), BENCH_EO_SHARDS
 * (default 8); PostgreSQL from DATABASE_URL / PG_URL / 127.0.0.1:5432 (a schema of its own).
 */
const SHARDS = Number(process.env.BENCH_EO_SHARDS ?? 8);
const PER_SHARD = Number(process.env.BENCH_EO_MESSAGES ?? 2000);
const INSERT = 'INSERT INTO effects (shard, entry_id, payload) VALUES ($1, $2, $3)';

async function run(
  label: string,
  handle: (shard: number, id: string) => Promise<void>,
): Promise<number> {
  const start = performance.now();
  await Promise.all(
    Array.from({ length: SHARDS }, async (_, shard) => {
      for (let i = 1; i <= PER_SHARD; i++) await handle(shard, `${1_700_000_000_000 + i}-0`);
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  const rate = (SHARDS * PER_SHARD) / seconds;
  process.stdout.write(`${label}: ${Math.round(rate)} messages/s (${seconds.toFixed(2)} s)\n`);
  return rate;
}

async function main(): Promise<void> {
  const db = await createTestSchema('bench_eo');
  try {
    const pool = new pg.Pool({ connectionString: db.url, max: SHARDS });
    await createExactlyOnceTable(pool);
    await pool.query(
      'CREATE TABLE effects (n bigserial PRIMARY KEY, shard int NOT NULL, entry_id text NOT NULL, payload text NOT NULL)',
    );
    const eo = new PostgresExactlyOnce({ pool });
    const payload = JSON.stringify({ orderId: 'o-1', amount: 42 });
    process.stdout.write(
      `exactly-once bench: ${SHARDS} shards x ${PER_SHARD} messages, pool of ${SHARDS} connections\n`,
    );
    // warm-up
    await run('warm-up (plain)', async (shard, id) => {
      await pool.query(INSERT, [shard + 100, id, payload]);
    });
    const plain = await run('plain handler (autocommit INSERT)', async (shard, id) => {
      await pool.query(INSERT, [shard, id, payload]);
    });
    const exactlyOnce = await run('exactly-once (apply + INSERT)', async (shard, id) => {
      await eo.apply({ group: 'bench', stream: 'orders', shard, id }, async (tx) => {
        await tx.query(INSERT, [shard, id, payload]);
      });
    });
    process.stdout.write(`exactly-once / plain: ${(exactlyOnce / plain).toFixed(2)}\n`);
    await pool.end();
  } finally {
    await db.drop();
  }
}

await main();
