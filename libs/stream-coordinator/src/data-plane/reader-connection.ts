import type { RedisConnection } from '../redis/redis-connection.types.js';

/**
 * A Redis call of a shard reader did not answer within its deadline (the connection is
 * presumed hung, e.g. after a network blip, and is replaced).
 *
 * @publicApi
 */
export class ReaderWatchdogError extends Error {
  override readonly name = 'ReaderWatchdogError';

  constructor(readonly timeoutMs: number) {
    super(`Redis did not answer within ${timeoutMs} ms; recreating the reader's connection`);
  }
}

/** A Redis call was abandoned because the reader is stopping. @publicApi */
export class ReaderStoppedError extends Error {
  override readonly name = 'ReaderStoppedError';

  constructor() {
    super('the shard reader is stopping');
  }
}

/** How long a graceful QUIT may take on close before the socket is dropped. */
const QUIT_TIMEOUT_MS = 1000;

/**
 * The dedicated connection of one shard reader. Every call runs against a deadline (the
 * watchdog) and, optionally, an abort signal: when either fires first the call is abandoned
 * (its late reply is ignored), the connection is dropped, and the next call gets a new one.
 * That makes a hung blocking read recoverable and `stop()` immediate without relying on the
 * socket closing cleanly.
 */
export class ReaderConnection {
  private current: RedisConnection | undefined;
  /** Connections created so far. */
  created = 0;

  constructor(
    private readonly factory: () => RedisConnection,
    private readonly onConnectionError: (error: Error) => void,
  ) {}

  /** The current connection, created on first use. */
  get(): RedisConnection {
    if (this.current === undefined) {
      const connection = this.factory();
      connection.on('error', this.onConnectionError);
      this.current = connection;
      this.created++;
    }
    return this.current;
  }

  /**
   * Runs `operation` on the current connection; rejects with {@link ReaderWatchdogError} after
   * `timeoutMs`, or with {@link ReaderStoppedError} when `signal` aborts, dropping the connection.
   */
  run<T>(
    operation: (connection: RedisConnection) => Promise<T>,
    timeoutMs: number,
    signal?: AbortSignal,
  ): Promise<T> {
    if (signal?.aborted) return Promise.reject(new ReaderStoppedError());
    const connection = this.get();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const onAbort = (): void => {
        if (!settle()) return;
        this.drop(connection);
        reject(new ReaderStoppedError());
      };
      const timer = setTimeout(() => {
        if (!settle()) return;
        this.drop(connection);
        reject(new ReaderWatchdogError(timeoutMs));
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      let pending: Promise<T>;
      try {
        pending = operation(connection);
      } catch (error) {
        if (settle()) reject(error);
        return;
      }
      pending.then(
        (value) => {
          if (settle()) resolve(value);
        },
        (error: unknown) => {
          if (settle()) reject(error);
        },
      );
    });
  }

  /** Disconnects `connection` (default: the current one); the next call creates a new one. */
  drop(connection: RedisConnection | undefined = this.current): void {
    if (connection === undefined) return;
    if (connection === this.current) this.current = undefined;
    connection.disconnect();
  }

  /** True when the current connection gave up reconnecting (status `end`). */
  isEnded(): boolean {
    return this.current?.status === 'end';
  }

  /** Closes the current connection: QUIT, or a plain disconnect if that does not answer soon. */
  async close(): Promise<void> {
    const connection = this.current;
    this.current = undefined;
    if (connection === undefined) return;
    if (connection.status !== 'ready') {
      connection.disconnect();
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      connection.quit().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, QUIT_TIMEOUT_MS);
      }),
    ]);
    clearTimeout(timer);
    connection.disconnect();
  }
}
