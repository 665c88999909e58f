import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createExactlyOnceTable,
  PostgresExactlyOnce,
} from '@redis-stream-coordinator/nestjs/postgres';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';

// Several workers started at once with `createTable: true` each create the offsets table. In
// PostgreSQL `CREATE TABLE IF NOT EXISTS` is not safe against a concurrent creator: the loser of
// the race fails with a unique violation on `pg_type` (or `duplicate_table`) instead of finding
// the table. Seen in the exactly-once chaos profile, whose members start together: a worker
// exited before it was ready with "duplicate key value violates unique constraint
// pg_type_typname_nsp_index" (2 of 7 runs on a loaded machine).
describe('e2e: creating the offsets table from several processes at once', () => {
  const CREATORS = 6;
  const ROUNDS = 8;
  let db: TestSchema;
  const clients: pg.Client[] = [];
  const pools: pg.Pool[] = [];

  beforeAll(async () => {
    db = await createTestSchema('eo_create');
    for (let i = 0; i < CREATORS; i++) {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      clients.push(client);
      const pool = new pg.Pool({ connectionString: db.url, max: 1 });
      pool.on('error', () => undefined);
      pools.push(pool);
    }
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    await Promise.all(pools.map((p) => p.end().catch(() => undefined)));
    await db?.drop();
  });

  it('createExactlyOnceTable: every concurrent caller succeeds and one table results', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const table = `offsets_fn_${round}`;
      const outcomes = await Promise.allSettled(
        clients.map((c) => createExactlyOnceTable(c as unknown as pg.PoolClient, table)),
      );
      const failures = outcomes.flatMap((o) =>
        o.status === 'rejected' ? [String((o.reason as Error).message)] : [],
      );
      expect(failures, `round ${round}`).toEqual([]);
      const { rows } = await db.pool.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = $1 AND tablename = $2',
        [db.schema, table],
      );
      expect(rows[0]?.n).toBe(1);
    }
  });

  it('PostgresExactlyOnce.createTable (createTable: true): every concurrent start succeeds', async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const table = `offsets_mod_${round}`;
      const outcomes = await Promise.allSettled(
        pools.map((pool) => new PostgresExactlyOnce({ pool, table }).createTable()),
      );
      const failures = outcomes.flatMap((o) =>
        o.status === 'rejected' ? [String((o.reason as Error).message)] : [],
      );
      expect(failures, `round ${round}`).toEqual([]);
    }
  });

  // A migration tool runs each migration in a transaction and may hand that client over. When
  // the DDL fails there (a missing schema, a missing privilege), the transaction is aborted, so a
  // session-level unlock after it fails too: the lock must not outlive the rolled-back
  // transaction, or every later creation of that table (each bootstrap with createTable: true)
  // waits for it forever.
  it('a failure inside the caller transaction leaves no lock behind', async () => {
    const missing = `${db.schema}_later`;
    const name = `${missing}.offsets`;
    const migrator = await db.pool.connect();
    try {
      await migrator.query('BEGIN');
      await expect(createExactlyOnceTable(migrator, name)).rejects.toThrow(/does not exist/);
      await migrator.query('ROLLBACK');
      // the connection stays open (back in the pool) as a migration tool's would
      await db.pool.query(`CREATE SCHEMA "${missing}"`);
      // another member's bootstrap, bounded: it must not wait for the migrator's session
      const otherPool = new pg.Pool({ connectionString: db.url, max: 1 });
      otherPool.on('error', () => undefined);
      const other = await otherPool.connect();
      try {
        await other.query('SET lock_timeout = 3000');
        await createExactlyOnceTable(other, name);
        const found = await other.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [
          name,
        ]);
        expect(found.rows[0]?.t).not.toBeNull();
      } finally {
        other.release();
        await otherPool.end();
        await db.pool.query(`DROP SCHEMA "${missing}" CASCADE`);
      }
    } finally {
      migrator.release();
    }
  });
});
