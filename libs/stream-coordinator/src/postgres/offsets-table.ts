import type { Pool, PoolClient } from 'pg';
import { ExactlyOnceTableOutdatedError } from '../errors/postgres/exactly-once-table-outdated.error.js';
import { InvalidExactlyOnceOptionsError } from '../errors/postgres/invalid-exactly-once-options.error.js';
import { formatStreamEntryId, type StreamEntryId } from './stream-entry-id.js';

/** The offsets table's default name. @publicApi */
export const DEFAULT_OFFSETS_TABLE = 'rsc_applied_offsets';

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * `table` (`name` or `schema.name`) quoted for SQL.
 *
 * @throws InvalidExactlyOnceOptionsError for anything but one or two plain identifiers.
 */
export function quoteTableName(table: string): string {
  const parts = typeof table === 'string' ? table.split('.') : [];
  if (parts.length < 1 || parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidExactlyOnceOptionsError(
      'table',
      `must be name or schema.name, each [A-Za-z_][A-Za-z0-9_]{0,62}; got ${JSON.stringify(table)}`,
    );
  }
  return parts.map((part) => `"${part}"`).join('.');
}

/** How many of a shard's latest dead letters its offset row remembers (`recent_dead_letters`). */
export const RECENT_DEAD_LETTERS = 32;

/**
 * The migration of the offsets table (also in `sql/exactly-once-offsets.sql` of the package):
 * one row per (group, stream, shard), the last entry id settled there as two `numeric(20,0)`
 * columns (Redis ids are two unsigned 64-bit integers; `bigint` is signed), `dead_lettered_id`:
 * the last entry of the shard settled as a dead letter (no effects), as `<ms>-<seq>`, or NULL,
 * and `recent_dead_letters`: the shard's latest {@link RECENT_DEAD_LETTERS} dead-lettered
 * entries, oldest first. Two statements, both idempotent: the `CREATE TABLE`, then a `DO` block
 * whose `ALTER TABLE … ADD COLUMN`s bring a table created by an older version up to date.
 *
 * @publicApi
 */
export function offsetsTableDdl(table: string = DEFAULT_OFFSETS_TABLE): string {
  const name = quoteTableName(table);
  return `CREATE TABLE IF NOT EXISTS ${name} (
  consumer_group text NOT NULL,
  stream text NOT NULL,
  shard integer NOT NULL,
  last_ms numeric(20, 0) NOT NULL,
  last_seq numeric(20, 0) NOT NULL,
  dead_lettered_id text,
  recent_dead_letters text[] NOT NULL DEFAULT '{}',
  applied_by text NOT NULL DEFAULT '',
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_group, stream, shard)
);
${addedColumnsDdl(name)}`;
}

/**
 * The upgrade of a table created before `dead_lettered_id` or `recent_dead_letters` (catalog only:
 * no table rewrite, the default being a constant). It looks first, so that on an up-to-date table
 * it takes no lock: `ALTER TABLE` takes an `ACCESS EXCLUSIVE` lock even when `IF NOT EXISTS`
 * makes it a no-op, which would queue every handler transaction behind an open one (a frozen
 * member's) at each bootstrap with `createTable: true`.
 */
function addedColumnsDdl(quoted: string): string {
  const missing = (column: string): string =>
    `NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('${quoted}') AND attname = '${column}' AND NOT attisdropped)`;
  return `DO $$
BEGIN
  IF ${missing('dead_lettered_id')} THEN
    ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS dead_lettered_id text;
  END IF;
  IF ${missing('recent_dead_letters')} THEN
    ALTER TABLE ${quoted} ADD COLUMN IF NOT EXISTS recent_dead_letters text[] NOT NULL DEFAULT '{}';
  END IF;
END
$$;`;
}

/**
 * Creates the offsets table if it does not exist, or adds the columns an older version's table
 * lacks (idempotent; the schema of a qualified name must exist). Safe to run from several
 * processes at once (replicas starting together with `createTable: true`): they take turns on a
 * PostgreSQL advisory lock held until the DDL's transaction ends. Pass a pool or a client; a
 * client inside a transaction runs the DDL in it (committed or rolled back with it).
 *
 * @publicApi
 */
export async function createExactlyOnceTable(
  db: Pool | PoolClient,
  table: string = DEFAULT_OFFSETS_TABLE,
): Promise<void> {
  const ddl = offsetsTableDdl(table); // validates the name, which the lock key then repeats
  // Two concurrent `CREATE TABLE IF NOT EXISTS` of one name: the later one does not find the
  // table (not committed yet) and fails on a duplicate key in pg_type. A transaction's advisory
  // lock serialises them: the statements of one simple query run as one transaction (or in the
  // caller's), so the lock is released when the DDL commits or rolls back, never later. A
  // session's lock would outlive a caller's transaction the DDL failed in (its unlock fails
  // there too) and hold up every later creation of the table.
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended('${ddlLockKey(table)}', 0));
${ddl}`);
}

/** The advisory lock key of the offsets table's DDL (one per table name, in any schema). */
function ddlLockKey(table: string): string {
  return `redis-stream-coordinator: offsets table DDL ${table}`;
}

/** The statements of one exactly-once transaction, for a quoted table name. */
export interface OffsetStatements {
  readonly ensureRow: string;
  readonly lockRow: string;
  readonly recordApplied: string;
  readonly recordDeadLettered: string;
}

/**
 * The locked row: the last entry settled on the shard, the last one settled as a dead letter (the
 * same entry when the last one was dead-lettered), and the latest dead-lettered ones.
 */
export interface OffsetRow {
  readonly last_ms: string;
  readonly last_seq: string;
  readonly dead_lettered_id: string | null;
  readonly recent_dead_letters: readonly string[];
}

export function offsetStatements(quoted: string): OffsetStatements {
  const where = 'consumer_group = $1 AND stream = $2 AND shard = $3';
  const record = `UPDATE ${quoted} SET last_ms = $4, last_seq = $5, applied_by = $6, applied_at = now()`;
  return {
    ensureRow: `INSERT INTO ${quoted} (consumer_group, stream, shard, last_ms, last_seq) VALUES ($1, $2, $3, 0, 0) ON CONFLICT (consumer_group, stream, shard) DO NOTHING`,
    lockRow: `SELECT last_ms::text AS last_ms, last_seq::text AS last_seq, dead_lettered_id, coalesce(recent_dead_letters, '{}') AS recent_dead_letters FROM ${quoted} WHERE ${where} FOR UPDATE`,
    // leaves the dead letter columns: they name earlier entries now
    recordApplied: `${record} WHERE ${where}`,
    // appends $7 to recent_dead_letters and keeps the latest RECENT_DEAD_LETTERS (a NULL list,
    // from a migration of one's own that left the column nullable, reads as empty)
    recordDeadLettered: `${record}, dead_lettered_id = $7, recent_dead_letters = (array_append(coalesce(recent_dead_letters, '{}'), $7::text))[greatest(1, coalesce(cardinality(recent_dead_letters), 0) + 2 - ${RECENT_DEAD_LETTERS}):] WHERE ${where}`,
  };
}

/**
 * Whether entry `id` was settled as a dead letter: the shard's last settled entry recorded as
 * dead-lettered, or one of its latest {@link RECENT_DEAD_LETTERS} dead letters. Its dead letter
 * may not be in Redis — its member died before writing it (then it is the last settled entry), or
 * Redis lost it with its last writes (docs/exactly-once.md, "When Redis loses writes") — so a
 * delivery of it must dead-letter it (again), never apply it or skip it as applied.
 */
export function isDeadLettered(id: StreamEntryId, row: OffsetRow): boolean {
  const formatted = formatStreamEntryId(id);
  if (row.recent_dead_letters.includes(formatted)) return true;
  return (
    row.dead_lettered_id === formatted &&
    formatStreamEntryId({ ms: BigInt(row.last_ms), seq: BigInt(row.last_seq) }) === formatted
  );
}

/** PostgreSQL's `undefined_column`: a table from before a column was added. */
const UNDEFINED_COLUMN = '42703';

/**
 * `error`, or {@link ExactlyOnceTableOutdatedError} when it says the offsets table lacks a
 * column (created by an older version and not migrated), which says what to run.
 */
export function explainOutdatedTable(error: unknown, table: string): unknown {
  const code =
    typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return code === UNDEFINED_COLUMN
    ? new ExactlyOnceTableOutdatedError(table, { cause: error })
    : error;
}
