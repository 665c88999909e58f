import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The options of `PostgresExactlyOnceModule.forRoot` (or of `PostgresExactlyOnce`) are invalid:
 * neither or both of `pool` and `connectionString`, or a `table` name that is not a plain
 * (optionally schema-qualified) SQL identifier. Thrown at bootstrap; nothing was opened.
 *
 * @publicApi
 */
export class InvalidExactlyOnceOptionsError extends StreamCoordinatorError {
  override name = 'InvalidExactlyOnceOptionsError';

  constructor(
    readonly option: string,
    reason: string,
  ) {
    super(`PostgresExactlyOnceModule option ${option}: ${reason}`);
  }
}
