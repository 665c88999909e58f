/**
 * Redis did not answer for the whole of `REDIS_STARTUP_TIMEOUT_MS` while the coordinator started;
 * the process stops (exit 1) with this message instead of serving without its state.
 */
export class RedisUnavailableAtStartError extends Error {
  override readonly name = 'RedisUnavailableAtStartError';

  constructor(
    readonly timeoutMs: number,
    readonly step: string,
    readonly lastError: string,
  ) {
    super(
      `Redis did not answer for ${timeoutMs} ms while the coordinator started (${step}; last ` +
        `error: ${lastError}). Check that Redis is up and that REDIS_URL points at it (host, ` +
        'port, TLS, credentials), or give it longer with REDIS_STARTUP_TIMEOUT_MS.',
    );
  }
}
