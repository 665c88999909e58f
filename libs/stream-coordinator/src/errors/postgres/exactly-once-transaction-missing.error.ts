import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A `@PgTransaction()` parameter was resolved outside an exactly-once call: the handler lacks
 * `@ExactlyOnce()` (or the parameter is used on something other than a `@StreamShardHandler`).
 * Thrown for the message, which then fails (and is retried) without anything written.
 *
 * @publicApi
 */
export class ExactlyOnceTransactionMissingError extends StreamCoordinatorError {
  override name = 'ExactlyOnceTransactionMissingError';

  constructor() {
    super(
      '@PgTransaction() has no transaction to give: decorate the @StreamShardHandler method with @ExactlyOnce() (from @redis-stream-coordinator/nestjs/postgres) and import PostgresExactlyOnceModule.forRoot(...)',
    );
  }
}
