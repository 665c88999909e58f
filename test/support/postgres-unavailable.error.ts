/**
 * No PostgreSQL for the tests: `DATABASE_URL`/`PG_URL` is set but nothing answers there, or none
 * of the fallbacks (local default port, Docker) worked. The message says how to get one.
 */
export class PostgresUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PostgresUnavailableError';
  }
}
