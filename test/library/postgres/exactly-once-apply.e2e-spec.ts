import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createExactlyOnceTable,
  InvalidExactlyOnceOptionsError,
  InvalidStreamEntryIdError,
  PostgresExactlyOnce,
} from '@redis-stream-coordinator/nestjs/postgres';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';
import { waitFor } from '../../support/wait.js';

// PostgresExactlyOnce.apply against a real PostgreSQL (a schema of its own): the interleavings
// of docs/exactly-once.md, each driven by hand — a redelivery after commit, a zombie that wakes
// after the new owner committed, two owners at once on the lock, a failing handler, and a
// connection killed mid-transaction (pg_terminate_backend, standing in for a server restart).
describe('e2e: exactly-once apply on PostgreSQL', () => {
  let db: TestSchema;
  let eo: PostgresExactlyOnce;
  const entry = (id: string, shard = 0) => ({
    group: 'g',
    stream: 'orders',
    shard,
    id,
    memberId: 'm1',
  });
  const effect =
    (id: string) =>
    async (tx: pg.PoolClient): Promise<string> => {
      await tx.query('INSERT INTO effects (entry_id) VALUES ($1)', [id]);
      return id;
    };
  const effects = async (): Promise<string[]> =>
    (await db.pool.query<{ entry_id: string }>('SELECT entry_id FROM effects ORDER BY n')).rows.map(
      (r) => r.entry_id,
    );

  beforeAll(async () => {
    db = await createTestSchema('eo_apply');
    await createExactlyOnceTable(db.pool);
    await db.pool.query('CREATE TABLE effects (n bigserial PRIMARY KEY, entry_id text NOT NULL)');
    eo = new PostgresExactlyOnce({ pool: db.pool });
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('applies an entry once; its redelivery and older ids are skipped', async () => {
    expect(await eo.apply(entry('100-0', 1), effect('100-0'))).toEqual({
      applied: true,
      result: '100-0',
    });
    // the crash between commit and ack: the same entry comes back
    expect(await eo.apply(entry('100-0', 1), effect('100-0'))).toEqual({
      applied: false,
      lastApplied: '100-0',
    });
    expect((await eo.apply(entry('99-7', 1), effect('99-7'))).applied).toBe(false);
    expect((await eo.apply(entry('100-1', 1), effect('100-1'))).applied).toBe(true);
    expect(await effects()).toEqual(['100-0', '100-1']);
  });

  it('compares ids as numbers (9-0 before 10-0, 5-9 before 5-10)', async () => {
    expect((await eo.apply(entry('9-0', 2), effect('9-0'))).applied).toBe(true);
    expect((await eo.apply(entry('10-0', 2), effect('10-0'))).applied).toBe(true);
    expect((await eo.apply(entry('10-9', 2), effect('10-9'))).applied).toBe(true);
    expect((await eo.apply(entry('10-10', 2), effect('10-10'))).applied).toBe(true);
    expect((await eo.apply(entry('10-2', 2), effect('10-2'))).applied).toBe(false);
    const row = await db.pool.query(
      'SELECT last_ms::text, last_seq::text, applied_by FROM rsc_applied_offsets WHERE shard = 2',
    );
    expect(row.rows[0]).toEqual({ last_ms: '10', last_seq: '10', applied_by: 'm1' });
  });

  it('a zombie that wakes after the new owner committed later entries applies nothing', async () => {
    // the new owner handled 200-0 and 201-0; the zombie still holds 200-0 from before its pause
    expect((await eo.apply(entry('200-0', 3), effect('200-0'))).applied).toBe(true);
    expect((await eo.apply(entry('201-0', 3), effect('201-0'))).applied).toBe(true);
    const zombie = new PostgresExactlyOnce({ pool: db.pool });
    expect((await zombie.apply(entry('200-0', 3), effect('200-0 again'))).applied).toBe(false);
    expect((await effects()).filter((id) => id.startsWith('200-0'))).toEqual(['200-0']);
  });

  it('two owners on one entry at once: the second waits for the lock, then skips', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inside = false;
    const first = eo.apply(entry('300-0', 4), async (tx) => {
      inside = true;
      await gate;
      return effect('300-0')(tx);
    });
    await waitFor(() => inside, { timeoutMs: 5000, message: 'the first owner to hold the lock' });
    const second = eo.apply(entry('300-0', 4), effect('300-0 twice'));
    // the second one is blocked on the row (its insert waits for the first transaction)
    await waitFor(
      async () =>
        (
          await db.pool.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%rsc_applied_offsets%'",
          )
        ).rows[0].n > 0,
      { timeoutMs: 5000, message: 'the second owner to wait on the offset row lock' },
    ).finally(release);
    expect((await first).applied).toBe(true);
    expect((await second).applied).toBe(false);
    expect((await effects()).filter((id) => id.startsWith('300-0'))).toEqual(['300-0']);
  });

  it('a failing handler rolls its writes back; the retry applies them once', async () => {
    await expect(
      eo.apply(entry('400-0', 5), async (tx) => {
        await effect('400-0 failed')(tx);
        throw new Error('handler failed');
      }),
    ).rejects.toThrow('handler failed');
    expect((await effects()).some((id) => id.startsWith('400-0'))).toBe(false);
    expect((await eo.apply(entry('400-0', 5), effect('400-0'))).applied).toBe(true);
    expect((await effects()).filter((id) => id.startsWith('400-0'))).toEqual(['400-0']);
  });

  it('a connection killed mid-transaction commits nothing; the retry applies once', async () => {
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => undefined);
    const own = new PostgresExactlyOnce({ pool });
    try {
      await expect(
        own.apply(entry('500-0', 6), async (tx) => {
          await effect('500-0 lost')(tx);
          const pid = (await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!
            .pid;
          // another session kills this backend, as a PostgreSQL restart would
          await db.pool.query('SELECT pg_terminate_backend($1)', [pid]);
          await tx.query('SELECT 1');
        }),
      ).rejects.toThrow();
      expect((await effects()).some((id) => id.startsWith('500-0'))).toBe(false);
      expect((await own.apply(entry('500-0', 6), effect('500-0'))).applied).toBe(true);
      expect((await effects()).filter((id) => id.startsWith('500-0'))).toEqual(['500-0']);
    } finally {
      await pool.end();
    }
  });

  it('refuses bad options and bad ids, changing nothing', async () => {
    expect(() => new PostgresExactlyOnce({})).toThrow(InvalidExactlyOnceOptionsError);
    expect(() => new PostgresExactlyOnce({ pool: db.pool, connectionString: db.url })).toThrow(
      InvalidExactlyOnceOptionsError,
    );
    expect(() => new PostgresExactlyOnce({ pool: db.pool, table: 'x; DROP TABLE y' })).toThrow(
      /schema\.name/,
    );
    await expect(eo.apply(entry('12'), effect('12'))).rejects.toThrow(InvalidStreamEntryIdError);
    expect(await effects()).not.toContain('12');
  });
});
