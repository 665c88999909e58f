import type { Pool, PoolClient } from 'pg';
import type {
  AppliedEntryRef,
  ExactlyOnceAppliedCheck,
} from '../interfaces/exactly-once-applied-check.interface.js';
import { withTimeout } from '../redis/bounded-call.js';
import { endOnAbort, untilAborted } from './abortable-check.js';
import {
  explainOutdatedTable,
  isDeadLettered,
  type OffsetRow,
  offsetStatements,
  quoteTableName,
} from './offsets-table.js';
import { alreadyApplied, formatStreamEntryId, parseStreamEntryId } from './stream-entry-id.js';

/**
 * Longest the server waits for the offset row's lock (`lock_timeout`): a decision that waits
 * longer (a frozen owner holds the row) fails, ends on the server and gives its connection back,
 * and is retried.
 */
const LOCK_TIMEOUT_MS = 5000;
/** Longest a decision may take on the client (a connection attempt that hangs): then it fails too. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * Settles the dead-letter decision of an exactly-once entry in the offsets table, with the
 * comparison `PostgresExactlyOnce.apply` uses. In a transaction of its own it inserts the shard's
 * row if missing and locks it (`FOR UPDATE`), so a transaction of the entry still committing —
 * one that created the row too — is waited for instead of read as not applied. Then: the entry
 * is at or before the recorded id → applied (rolled back, nothing changed); else the row records
 * the entry as the last one settled, as a dead letter, and that commits before the answer — any
 * later transaction for the entry (a zombie's) then finds it settled and writes nothing. The
 * wait is bounded on the server (`lock_timeout`), so a timed-out decision holds no connection
 * and records nothing.
 */
export class PostgresAppliedEntryCheck implements ExactlyOnceAppliedCheck {
  readonly #ensureRow: string;
  readonly #lockRow: string;
  readonly #recordDeadLettered: string;

  constructor(
    private readonly pool: Pool,
    private readonly table: string,
  ) {
    const statements = offsetStatements(quoteTableName(table));
    this.#ensureRow = statements.ensureRow;
    this.#lockRow = statements.lockRow;
    this.#recordDeadLettered = statements.recordDeadLettered;
  }

  /**
   * Rejects at once when `signal` (the reader's) fires: the answer is then unknown, and the
   * connection is ended, so a decision not committed yet never commits.
   */
  async settle(entry: AppliedEntryRef, signal?: AbortSignal): Promise<boolean> {
    parseStreamEntryId(entry.id); // refuses a bad id before anything is asked
    try {
      return await withTimeout(
        untilAborted(this.#settle(entry, signal), signal),
        CHECK_TIMEOUT_MS,
        'the offsets table update',
      );
    } catch (error) {
      throw explainOutdatedTable(error, this.table);
    }
  }

  async #settle(entry: AppliedEntryRef, signal: AbortSignal | undefined): Promise<boolean> {
    const id = parseStreamEntryId(entry.id);
    const client: PoolClient = await this.pool.connect();
    const stopWatching = endOnAbort(client, signal);
    let broken: Error | undefined;
    let committed = false;
    try {
      const key = [entry.group, entry.stream, entry.shard];
      await client.query('BEGIN');
      await client.query(`SET LOCAL lock_timeout = ${LOCK_TIMEOUT_MS}`);
      await client.query(this.#ensureRow, key);
      const { rows } = await client.query<OffsetRow>(this.#lockRow, key);
      const row = rows[0];
      if (row === undefined) throw new Error('the offset row vanished right after being inserted');
      const last = { ms: BigInt(row.last_ms), seq: BigInt(row.last_seq) };
      // recorded already as this entry's dead letter (a decision retried after its commit, a
      // member that died before writing the dead letter, or a dead letter Redis lost with its
      // last writes): dead-letter it
      if (isDeadLettered(id, row)) return false;
      if (alreadyApplied(id, last)) return true;
      // entries of a shard are settled in id order: every one before this was applied or
      // dead-lettered already, so moving the row to this one passes over none
      await client.query(this.#recordDeadLettered, [
        ...key,
        id.ms.toString(),
        id.seq.toString(),
        entry.memberId ?? '',
        formatStreamEntryId(id),
      ]);
      await client.query('COMMIT');
      committed = true;
      return false;
    } finally {
      if (!committed) {
        try {
          await client.query('ROLLBACK');
        } catch (error) {
          broken = error instanceof Error ? error : new Error(String(error));
        }
      }
      stopWatching();
      // a connection the abort ended (also after the commit) must not go back to the pool
      client.release(broken ?? (signal?.aborted ? new Error('the reader stopped') : undefined));
    }
  }
}
