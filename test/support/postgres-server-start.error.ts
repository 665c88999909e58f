/**
 * A private PostgreSQL cluster could not be created or started, or did not become ready in time
 * (the message names the missing binary or carries the tail of the server's log).
 */
export class PostgresServerStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PostgresServerStartError';
  }
}
