import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createExactlyOnceTable,
  ExactlyOnceEntryDeadLetteredError,
  ExactlyOnceTableOutdatedError,
  PostgresExactlyOnce,
} from '@redis-stream-coordinator/nestjs/postgres';
import { PostgresAppliedEntryCheck } from '../../../libs/stream-coordinator/src/postgres/postgres-applied-entry-check.js';
import {
  DEFAULT_OFFSETS_TABLE,
  RECENT_DEAD_LETTERS,
} from '../../../libs/stream-coordinator/src/postgres/offsets-table.js';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';

// The dead-letter decision of an exactly-once entry (docs/exactly-once.md): it must see a commit
// that is still in flight, also the shard's first one (which creates the row), and an entry it
// lets be dead-lettered is recorded so that no later attempt applies it (issue #20).
describe('e2e: the dead-letter decision on PostgreSQL', () => {
  let db: TestSchema;
  beforeAll(async () => {
    db = await createTestSchema('eo_check');
    await createExactlyOnceTable(db.pool);
  });
  afterAll(async () => {
    await db?.drop();
  });

  const offsetRows = async (group: string) =>
    (
      await db.pool.query<{ shard: number; last: string; dead_lettered_id: string | null }>(
        `SELECT shard, last_ms::text || '-' || last_seq::text AS last, dead_lettered_id FROM ${DEFAULT_OFFSETS_TABLE} WHERE consumer_group = $1 ORDER BY shard`,
        [group],
      )
    ).rows;

  it("waits for a transaction still creating the shard's first offset row, then sees it applied", async () => {
    const check = new PostgresAppliedEntryCheck(db.pool, DEFAULT_OFFSETS_TABLE);
    const ref = { group: 'g', stream: 'orders', shard: 8, id: '1700000000000-3' };
    // an owner mid-apply: its transaction inserted the row and recorded the entry, not committed
    const owner = await db.pool.connect();
    try {
      await owner.query('BEGIN');
      await owner.query(
        `INSERT INTO ${DEFAULT_OFFSETS_TABLE} (consumer_group, stream, shard, last_ms, last_seq) VALUES ('g', 'orders', 8, 1700000000000, 3)`,
      );
      const asked = check.settle(ref);
      const settled = await Promise.race([
        asked.then(() => 'answered'),
        new Promise((resolve) => setTimeout(resolve, 300, 'waiting')),
      ]);
      expect(settled).toBe('waiting');
      await owner.query('COMMIT');
      expect(await asked).toBe(true);
    } finally {
      owner.release();
    }
    // an applied entry's decision changes nothing in the row
    expect(await offsetRows('g')).toEqual([
      { shard: 8, last: '1700000000000-3', dead_lettered_id: null },
    ]);
  });

  it('records an entry it lets be dead-lettered: a later attempt is refused, the next entry applied', async () => {
    const check = new PostgresAppliedEntryCheck(db.pool, DEFAULT_OFFSETS_TABLE);
    const exactlyOnce = new PostgresExactlyOnce({ pool: db.pool });
    const entry = { group: 'g-dl', stream: 'orders', shard: 1, id: '1700000000000-5' };
    expect(await check.settle(entry)).toBe(false);
    expect(await offsetRows('g-dl')).toEqual([
      { shard: 1, last: '1700000000000-5', dead_lettered_id: '1700000000000-5' },
    ]);
    // asked again (a decision retried after its commit): still to be dead-lettered
    expect(await check.settle(entry)).toBe(false);
    // a zombie's attempt at it: refused, the work not run
    let ran = 0;
    await expect(
      exactlyOnce.apply(entry, async () => {
        ran++;
      }),
    ).rejects.toBeInstanceOf(ExactlyOnceEntryDeadLetteredError);
    expect(ran).toBe(0);
    // an earlier entry (settled before it) is skipped as before
    expect(await exactlyOnce.apply({ ...entry, id: '1700000000000-4' }, async () => 1)).toEqual({
      applied: false,
      lastApplied: '1700000000000-5',
    });
    // the next entry is applied (the mark names an earlier entry now) and reads as settled; the
    // dead-lettered one is still to be dead-lettered when delivered again (its ack never sent, or
    // Redis lost it with its dead letter): it is among the shard's latest dead letters
    expect(await exactlyOnce.apply({ ...entry, id: '1700000000001-0' }, async () => 2)).toEqual({
      applied: true,
      result: 2,
    });
    expect(await offsetRows('g-dl')).toEqual([
      { shard: 1, last: '1700000000001-0', dead_lettered_id: '1700000000000-5' },
    ]);
    expect(await check.settle({ ...entry, id: '1700000000001-0' })).toBe(true);
    expect(await check.settle(entry)).toBe(false);
    await expect(exactlyOnce.apply(entry, async () => 3)).rejects.toBeInstanceOf(
      ExactlyOnceEntryDeadLetteredError,
    );
    // (asking again recorded nothing new)
    expect(await recentDeadLetters('g-dl', 1)).toEqual(['1700000000000-5']);
  });

  it(`remembers a shard's latest ${RECENT_DEAD_LETTERS} dead letters, each once`, async () => {
    const check = new PostgresAppliedEntryCheck(db.pool, DEFAULT_OFFSETS_TABLE);
    const exactlyOnce = new PostgresExactlyOnce({ pool: db.pool });
    const at = (n: number) => ({
      group: 'g-recent',
      stream: 'orders',
      shard: 3,
      id: `1700000000${String(n).padStart(3, '0')}-0`,
    });
    // one more dead letter than the row keeps, an applied entry between each two
    for (let n = 0; n <= RECENT_DEAD_LETTERS; n++) {
      expect(await check.settle(at(2 * n))).toBe(false);
      expect(await check.settle(at(2 * n))).toBe(false); // a retried decision: listed once
      expect(await exactlyOnce.apply(at(2 * n + 1), async () => n)).toEqual({
        applied: true,
        result: n,
      });
    }
    const kept = Array.from({ length: RECENT_DEAD_LETTERS }, (_, i) => at(2 * (i + 1)).id);
    expect(await recentDeadLetters('g-recent', 3)).toEqual(kept);
    // the oldest fell out: it reads as settled (skipped, no dead letter); the others are
    // dead-lettered again; applied entries stay applied
    expect(await check.settle(at(0))).toBe(true);
    expect(await exactlyOnce.apply(at(0), async () => 'again')).toMatchObject({ applied: false });
    expect(await check.settle(at(2))).toBe(false);
    await expect(exactlyOnce.apply(at(2), async () => 'again')).rejects.toBeInstanceOf(
      ExactlyOnceEntryDeadLetteredError,
    );
    expect(await check.settle(at(3))).toBe(true);
    expect(await recentDeadLetters('g-recent', 3)).toEqual(kept);
  });

  const recentDeadLetters = async (group: string, shard: number): Promise<string[]> =>
    (
      await db.pool.query<{ recent_dead_letters: string[] }>(
        `SELECT recent_dead_letters FROM ${DEFAULT_OFFSETS_TABLE} WHERE consumer_group = $1 AND shard = $2`,
        [group, shard],
      )
    ).rows[0]?.recent_dead_letters ?? [];

  it('a lock not granted in time records nothing', async () => {
    const check = new PostgresAppliedEntryCheck(db.pool, DEFAULT_OFFSETS_TABLE);
    const entry = { group: 'g-held', stream: 'orders', shard: 2, id: '1700000000000-1' };
    const owner = await db.pool.connect();
    try {
      await owner.query('BEGIN');
      await owner.query(
        `INSERT INTO ${DEFAULT_OFFSETS_TABLE} (consumer_group, stream, shard, last_ms, last_seq) VALUES ('g-held', 'orders', 2, 0, 0)`,
      );
      // the owner holds the row for longer than the decision's lock_timeout (5 s)
      await expect(check.settle(entry)).rejects.toThrow(/lock timeout/);
      await owner.query('ROLLBACK');
    } finally {
      owner.release();
    }
    expect(await offsetRows('g-held')).toEqual([]);
  }, 20_000);

  it('a table from before dead_lettered_id: the error says how to migrate, and the DDL migrates it', async () => {
    await db.pool.query(`CREATE TABLE old_offsets (
      consumer_group text NOT NULL, stream text NOT NULL, shard integer NOT NULL,
      last_ms numeric(20, 0) NOT NULL, last_seq numeric(20, 0) NOT NULL,
      applied_by text NOT NULL DEFAULT '', applied_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (consumer_group, stream, shard))`);
    await db.pool.query(
      "INSERT INTO old_offsets (consumer_group, stream, shard, last_ms, last_seq) VALUES ('g-old', 'orders', 0, 1700000000000, 0)",
    );
    const check = new PostgresAppliedEntryCheck(db.pool, 'old_offsets');
    const exactlyOnce = new PostgresExactlyOnce({ pool: db.pool, table: 'old_offsets' });
    const entry = { group: 'g-old', stream: 'orders', shard: 0, id: '1700000000001-0' };
    await expect(check.settle(entry)).rejects.toBeInstanceOf(ExactlyOnceTableOutdatedError);
    await expect(exactlyOnce.apply(entry, async () => 1)).rejects.toThrow(
      /ADD COLUMN IF NOT EXISTS dead_lettered_id text; .* ADD COLUMN IF NOT EXISTS recent_dead_letters/,
    );
    await createExactlyOnceTable(db.pool, 'old_offsets');
    await createExactlyOnceTable(db.pool, 'old_offsets');
    // the old row keeps its offset and reads as applied, not dead-lettered
    // (an old-version member keeps writing last_ms/last_seq only: the mark then names another id)
    expect(await exactlyOnce.apply({ ...entry, id: '1700000000000-0' }, async () => 1)).toEqual({
      applied: false,
      lastApplied: '1700000000000-0',
    });
    expect(await exactlyOnce.apply(entry, async () => 1)).toEqual({ applied: true, result: 1 });
  });

  it('a table from before recent_dead_letters: refused until migrated, then its marks still hold', async () => {
    await db.pool.query(`CREATE TABLE mid_offsets (
      consumer_group text NOT NULL, stream text NOT NULL, shard integer NOT NULL,
      last_ms numeric(20, 0) NOT NULL, last_seq numeric(20, 0) NOT NULL, dead_lettered_id text,
      applied_by text NOT NULL DEFAULT '', applied_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (consumer_group, stream, shard))`);
    // the last settled entry was dead-lettered (its dead letter perhaps not written yet)
    await db.pool.query(
      "INSERT INTO mid_offsets (consumer_group, stream, shard, last_ms, last_seq, dead_lettered_id) VALUES ('g-mid', 'orders', 0, 1700000000000, 7, '1700000000000-7')",
    );
    const check = new PostgresAppliedEntryCheck(db.pool, 'mid_offsets');
    const exactlyOnce = new PostgresExactlyOnce({ pool: db.pool, table: 'mid_offsets' });
    const entry = { group: 'g-mid', stream: 'orders', shard: 0, id: '1700000000000-7' };
    await expect(check.settle(entry)).rejects.toBeInstanceOf(ExactlyOnceTableOutdatedError);
    await expect(exactlyOnce.apply(entry, async () => 1)).rejects.toBeInstanceOf(
      ExactlyOnceTableOutdatedError,
    );
    await createExactlyOnceTable(db.pool, 'mid_offsets');
    expect(await check.settle(entry)).toBe(false);
    await expect(exactlyOnce.apply(entry, async () => 1)).rejects.toBeInstanceOf(
      ExactlyOnceEntryDeadLetteredError,
    );
    // a dead letter recorded from now on is listed
    expect(await check.settle({ ...entry, id: '1700000000001-0' })).toBe(false);
    const { rows } = await db.pool.query<{ recent_dead_letters: string[] }>(
      "SELECT recent_dead_letters FROM mid_offsets WHERE consumer_group = 'g-mid'",
    );
    expect(rows).toEqual([{ recent_dead_letters: ['1700000000001-0'] }]);
  });

  it('a recent_dead_letters column added nullable by a migration of its own: NULL reads as empty', async () => {
    await db.pool.query(`CREATE TABLE own_offsets (
      consumer_group text NOT NULL, stream text NOT NULL, shard integer NOT NULL,
      last_ms numeric(20, 0) NOT NULL, last_seq numeric(20, 0) NOT NULL, dead_lettered_id text,
      recent_dead_letters text[], applied_by text NOT NULL DEFAULT '',
      applied_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer_group, stream, shard))`);
    await db.pool.query(
      "INSERT INTO own_offsets (consumer_group, stream, shard, last_ms, last_seq) VALUES ('g-own', 'orders', 0, 1700000000000, 0)",
    );
    const check = new PostgresAppliedEntryCheck(db.pool, 'own_offsets');
    const exactlyOnce = new PostgresExactlyOnce({ pool: db.pool, table: 'own_offsets' });
    const entry = { group: 'g-own', stream: 'orders', shard: 0, id: '1700000000000-0' };
    expect(await exactlyOnce.apply(entry, async () => 1)).toMatchObject({ applied: false });
    expect(await check.settle(entry)).toBe(true);
    expect(await check.settle({ ...entry, id: '1700000000001-0' })).toBe(false);
    const { rows } = await db.pool.query<{ recent_dead_letters: string[] | null }>(
      "SELECT recent_dead_letters FROM own_offsets WHERE consumer_group = 'g-own'",
    );
    expect(rows).toEqual([{ recent_dead_letters: ['1700000000001-0'] }]);
  });

  it('the DDL on an up-to-date table takes no lock: a bootstrap does not queue behind an open transaction', async () => {
    const owner = await db.pool.connect();
    const migrator = await db.pool.connect();
    try {
      await owner.query('BEGIN');
      await owner.query(
        `INSERT INTO ${DEFAULT_OFFSETS_TABLE} (consumer_group, stream, shard, last_ms, last_seq) VALUES ('g-ddl', 'orders', 0, 0, 0)`,
      );
      // a frozen member's transaction holds the table (ROW EXCLUSIVE) and stays open; any lock
      // that conflicts with it (ALTER TABLE's ACCESS EXCLUSIVE) would time out at once
      await migrator.query('SET lock_timeout = 50');
      await createExactlyOnceTable(migrator);
      await owner.query('ROLLBACK');
    } finally {
      await migrator.query('RESET lock_timeout');
      owner.release();
      migrator.release();
    }
  });
});
