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
      `the offsets table ${table} has no dead_lettered_id column (it was created by an older version of the library): run ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS dead_lettered_id text (the last statement of the package's sql/exactly-once-offsets.sql, which is safe to run again, as are createExactlyOnceTable() and createTable: true)`,
      options,
    );
  }
}
