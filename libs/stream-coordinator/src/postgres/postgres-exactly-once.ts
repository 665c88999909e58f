import pg, { type Pool, type PoolClient } from 'pg';
import { InvalidExactlyOnceOptionsError } from '../errors/postgres/invalid-exactly-once-options.error.js';
import type { PostgresExactlyOnceOptions } from './postgres-exactly-once-options.interface.js';
import { ExactlyOnceEntryDeadLetteredError } from '../errors/postgres/exactly-once-entry-dead-lettered.error.js';
import {
  DEFAULT_OFFSETS_TABLE,
  explainOutdatedTable,
  isDeadLettered,
  createExactlyOnceTable,
  type OffsetRow,
  offsetStatements,
  type OffsetStatements,
  quoteTableName,
} from './offsets-table.js';
import { alreadyApplied, formatStreamEntryId, parseStreamEntryId } from './stream-entry-id.js';

/**
 * Which entry an exactly-once call is for: a `StreamShardContext` has all of it.
 *
 * @publicApi
 */
export interface ExactlyOnceEntry {
  readonly group: string;
  readonly stream: string;
  readonly shard: number;
  /** The Redis Stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  /** Recorded as `applied_by` (diagnostics only). */
  readonly memberId?: string;
}

/**
 * What an exactly-once call did: `applied` with the work's result, or `skipped` — the entry's id
 * is at or before the last one settled for its shard, so its effects are already committed, or
 * it was dead-lettered before a later entry was applied (a redelivery after a crash between
 * commit and ack, or a zombie's late attempt).
 *
 * @publicApi
 */
export type ExactlyOnceOutcome<T> =
  | { readonly applied: true; readonly result: T }
  | { readonly applied: false; readonly lastApplied: string };

/**
 * Applies a stream entry's effects to PostgreSQL at most once per entry id: one transaction locks
 * the shard's offset row (`SELECT … FOR UPDATE`, creating it if absent), skips the entry when its
 * id is at or before the recorded one, else runs `work` with the transaction's client, records the
 * id and commits. An entry the row records as settled as a dead letter is refused
 * ({@link ExactlyOnceEntryDeadLetteredError}) without running `work`. Combined with the library's
 * at-least-once delivery (the ack follows the commit), every entry's effects are committed
 * exactly once. See docs/exactly-once.md.
 *
 * @publicApi
 */
export class PostgresExactlyOnce {
  /** The pool the transactions come from. */
  readonly pool: Pool;
  /** The offsets table (as configured, unquoted). */
  readonly table: string;
  readonly #ownsPool: boolean;
  readonly #statements: OffsetStatements;

  constructor(options: PostgresExactlyOnceOptions) {
    const hasPool = options.pool !== undefined;
    const hasUrl = options.connectionString !== undefined;
    if (hasPool === hasUrl) {
      throw new InvalidExactlyOnceOptionsError(
        hasPool ? 'pool' : 'connectionString',
        'give exactly one of pool (a pg Pool) and connectionString',
      );
    }
    if (hasUrl && (typeof options.connectionString !== 'string' || !options.connectionString)) {
      throw new InvalidExactlyOnceOptionsError('connectionString', 'must be a non-empty string');
    }
    if (hasPool && typeof (options.pool as Pool).connect !== 'function') {
      throw new InvalidExactlyOnceOptionsError('pool', 'must be a pg Pool');
    }
    const max = options.maxConnections ?? 10;
    if (!Number.isInteger(max) || max < 1) {
      throw new InvalidExactlyOnceOptionsError(
        'maxConnections',
        `must be a positive integer; got ${String(max)}`,
      );
    }
    this.table = options.table ?? DEFAULT_OFFSETS_TABLE;
    this.#statements = offsetStatements(quoteTableName(this.table));
    this.#ownsPool = !hasPool;
    this.pool = options.pool ?? new pg.Pool({ connectionString: options.connectionString, max });
  }

  /** Creates the offsets table if absent (`createTable: true` does it at bootstrap). */
  async createTable(): Promise<void> {
    await createExactlyOnceTable(this.pool, this.table);
  }

  /**
   * Runs `work` in a transaction with the entry's offset, unless the entry was already applied.
   * Rejects when the work or the database fails: nothing of the attempt is committed then, and
   * the handler's failure makes the message retried (then dead-lettered) as any other.
   *
   * @throws ExactlyOnceEntryDeadLetteredError when the entry was settled as a dead letter (the
   *   shard's last settled entry, or one of its latest dead letters): the library then
   *   dead-letters it again; nothing is written.
   * @throws ExactlyOnceTableOutdatedError when the offsets table was created by an older version
   *   and lacks a column: run the migration (docs/exactly-once.md).
   */
  async apply<T>(
    entry: ExactlyOnceEntry,
    work: (tx: PoolClient) => Promise<T>,
  ): Promise<ExactlyOnceOutcome<T>> {
    const id = parseStreamEntryId(entry.id);
    const key = [entry.group, entry.stream, entry.shard];
    const client = await this.pool.connect();
    // a connection dying while no query runs is emitted as 'error': without a listener it would
    // crash the process; the next query on the client rejects with it instead
    let broken: Error | undefined;
    const onError = (error: Error): void => {
      broken = error;
    };
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const row = await this.lockOffset(client, key);
      if (isDeadLettered(id, row)) {
        // rolled back below, as after any failure
        throw new ExactlyOnceEntryDeadLetteredError(entry.id, entry.stream, entry.shard);
      }
      const last = { ms: BigInt(row.last_ms), seq: BigInt(row.last_seq) };
      if (alreadyApplied(id, last)) {
        await client.query('ROLLBACK');
        return { applied: false, lastApplied: formatStreamEntryId(last) };
      }
      const result = await work(client);
      await client.query(this.#statements.recordApplied, [
        ...key,
        id.ms.toString(),
        id.seq.toString(),
        entry.memberId ?? '',
      ]);
      await client.query('COMMIT');
      return { applied: true, result };
    } catch (error) {
      broken ??= await rollback(client);
      throw error;
    } finally {
      client.off('error', onError);
      // a broken connection is destroyed, not returned to the pool
      client.release(broken);
    }
  }

  /**
   * Locks the shard's offset row (creating it if absent) and reads the last settled id, and the
   * last one settled as a dead letter.
   */
  private async lockOffset(client: PoolClient, key: unknown[]): Promise<OffsetRow> {
    for (let attempt = 0; ; attempt++) {
      const { rows } = await client
        .query<OffsetRow>(this.#statements.lockRow, key)
        .catch((error: unknown) => {
          throw explainOutdatedTable(error, this.table);
        });
      const row = rows[0];
      if (row !== undefined) return row;
      if (attempt > 0) throw new Error('the offset row vanished right after being inserted');
      await client.query(this.#statements.ensureRow, key);
    }
  }

  /** Ends the pool if this instance opened it. */
  async close(): Promise<void> {
    if (this.#ownsPool) await this.pool.end();
  }
}

/** Rolls back after a failure; returns the error when the connection is unusable. */
async function rollback(client: PoolClient): Promise<Error | undefined> {
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}
