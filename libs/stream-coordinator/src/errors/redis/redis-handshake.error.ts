import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A reader's direct connection could not be set up: Redis refused its `AUTH` (wrong user or
 * password, or an ACL that does not allow the user), its `SELECT`, or its `CLIENT SETNAME`.
 * Check the credentials and database in the `redis` option; the reader retries with a new
 * connection under its backoff.
 */
export class RedisHandshakeError extends StreamCoordinatorError {
  override readonly name = 'RedisHandshakeError';

  constructor(step: string, reply: string) {
    super(`Redis refused the reader connection's ${step}: ${reply}`);
  }
}
