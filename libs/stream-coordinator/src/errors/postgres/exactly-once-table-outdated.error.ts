import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The offsets table lacks a column this version of the library uses: it was created by an older
 * version and not migrated. Every exactly-once call (and dead-letter decision) fails with it until
 * the migration runs; the messages are retried meanwhile, nothing is written.
 *
 * @publicApi
 */
export class ExactlyOnceTableOutdatedError extends StreamCoordinatorError {
  override name = 'ExactlyOnceTableOutdatedError';

  constructor(
    /** The offsets table, as configured. */
    readonly table: string,
    options?: { cause?: unknown },
  ) {
    super(
      `the offsets table ${table} lacks a column this version of the library uses (it was created by an older version): run ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS dead_lettered_id text; ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS recent_dead_letters text[] NOT NULL DEFAULT '{}' (what the last statement of the package's sql/exactly-once-offsets.sql does, which is safe to run again, as are createExactlyOnceTable() and createTable: true)`,
      options,
    );
  }
}
