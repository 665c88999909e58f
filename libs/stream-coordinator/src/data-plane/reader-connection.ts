import { ReaderConnectionClosedError } from '../errors/data-plane/reader-connection-closed.error.js';
import { ReaderStoppedError } from '../errors/data-plane/reader-stopped.error.js';
import { ReaderWatchdogError } from '../errors/data-plane/reader-watchdog.error.js';
import { closeConnection } from '../redis/close-connection.js';
import { DirectReaderClient } from '../redis/direct/direct-reader-client.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';

/** A call in flight: when it must have answered, and how to end it early. */
interface PendingCall {
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly abortable: boolean;
  readonly connection: ReaderRedis;
  /** Settles the call with `error` (if it has not settled yet) and drops its connection. */
  readonly abandon: (error: Error) => void;
}

/**
 * The dedicated connection of one shard reader. Every call runs against a deadline (the
 * watchdog) and, when `abortable`, the reader's abort signal: when either fires first the call is
 * abandoned (its late reply is ignored), the connection is dropped, and the next call gets a new
 * one. That makes a hung blocking read recoverable and `stop()` immediate without relying on the
 * socket closing cleanly.
 *
 * A call is also abandoned when its connection emits `close` (a reset, Redis restarting): ioredis
 * drops the commands a closed connection left unanswered when it reconnects, since reader
 * connections do not resend them (see `create-redis-connection.ts`), so their promises would
 * never settle and the reader would sit in a dead read until the watchdog. A direct connection
 * (`redis/direct/`) fails them itself and ends for good; the next call gets a new one.
 *
 * Cheap per call (the read path makes one per batch): one abort listener for the reader's life,
 * and one watchdog timer that is re-armed only when it fires while a call is still in flight (not
 * a timer per call).
 */
export class ReaderConnection {
  private current: ReaderRedis | undefined;
  private readonly calls = new Set<PendingCall>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Number.POSITIVE_INFINITY;
  /** Connections created so far. */
  created = 0;

  constructor(
    private readonly factory: () => ReaderRedis,
    private readonly onConnectionError: (error: Error) => void,
    private readonly signal?: AbortSignal,
  ) {
    signal?.addEventListener(
      'abort',
      () => {
        for (const call of this.calls) {
          if (call.abortable) call.abandon(new ReaderStoppedError());
        }
      },
      { once: true },
    );
  }

  /**
   * The current connection, created on first use and again once the current one has ended (a
   * direct connection ends with its socket, an ioredis one when it gives up reconnecting): a
   * connection that closed between two calls must not fail the next one.
   */
  get(): ReaderRedis {
    if (this.current?.status === 'end') this.current = undefined;
    if (this.current === undefined) {
      const connection = this.factory();
      connection.on('error', this.onConnectionError);
      connection.on('close', () => this.closed(connection));
      this.current = connection;
      this.created++;
    }
    return this.current;
  }

  /**
   * Runs `operation` on the current connection; rejects with {@link ReaderWatchdogError} after
   * `timeoutMs`, or with {@link ReaderStoppedError} when the reader's signal aborts and the call
   * is `abortable` (or the signal had aborted already), dropping the connection.
   */
  run<T>(
    operation: (connection: ReaderRedis) => Promise<T>,
    timeoutMs: number,
    abortable = false,
  ): Promise<T> {
    if (abortable && this.signal?.aborted) return Promise.reject(new ReaderStoppedError());
    const connection = this.get();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const call: PendingCall = {
        deadline: performance.now() + timeoutMs,
        timeoutMs,
        abortable,
        connection,
        abandon: (error) => {
          if (settled) return;
          settled = true;
          this.calls.delete(call);
          this.drop(connection);
          reject(error);
        },
      };
      this.calls.add(call);
      this.arm(call.deadline);
      let pending: Promise<T>;
      try {
        pending = operation(connection);
      } catch (error) {
        settled = true;
        this.calls.delete(call);
        reject(error);
        return;
      }
      pending.then(
        (value) => {
          if (settled) return;
          settled = true;
          this.calls.delete(call);
          resolve(value);
        },
        (error: unknown) => {
          if (settled) return;
          settled = true;
          this.calls.delete(call);
          reject(error);
        },
      );
    });
  }

  /**
   * Disconnects `connection` (default: the current one); the next call creates a new one. A
   * connection ioredis is reconnecting already is kept: it gets a new socket on its own, and a
   * `disconnect()` between two sockets would strand it in `reconnecting` for good (no socket, no
   * timer, never `end`), a leak per drop while Redis is away.
   */
  drop(connection: ReaderRedis | undefined = this.current): void {
    if (connection === undefined || connection.status === 'reconnecting') return;
    if (connection === this.current) this.current = undefined;
    connection.disconnect();
  }

  /**
   * True when the current connection lost its socket: ioredis is reconnecting it or gave up, or a
   * direct connection ended (the next call replaces it; until then the reader treats Redis as
   * away and skips its best-effort calls at shutdown).
   */
  isDown(): boolean {
    const status = this.current?.status;
    return status === 'reconnecting' || status === 'close' || status === 'end';
  }

  /** True when the current connection has ended (ioredis gave up, or a direct one closed). */
  isEnded(): boolean {
    return this.current?.status === 'end';
  }

  /** Closes the current connection: QUIT, or a plain disconnect if that does not answer soon. */
  async close(): Promise<void> {
    this.disarm();
    const connection = this.current;
    this.current = undefined;
    if (connection !== undefined) await closeConnection(connection);
  }

  /**
   * `connection` closed: the calls in flight on it will never be answered. ioredis emits `close`
   * after it has scheduled the reconnect, so {@link drop} keeps the connection (`reconnecting`):
   * the next call waits in its offline queue until it is back, or fails and the reader backs off.
   * Only an ended connection (one ioredis gave up on, or a direct one) is replaced, by `get`.
   */
  private closed(connection: ReaderRedis): void {
    // (a direct connection knows why it closed: a refused AUTH, a reset; say it in the error)
    const reason = connection instanceof DirectReaderClient ? connection.closeReason : undefined;
    // (deleting from a Set while iterating it is safe: abandon() removes the call)
    for (const call of this.calls) {
      if (call.connection === connection) call.abandon(new ReaderConnectionClosedError(reason));
    }
  }

  /** Makes sure the watchdog timer fires by `deadline` (an earlier one stays). */
  private arm(deadline: number): void {
    if (this.timer !== undefined && this.timerAt <= deadline) return;
    this.disarm();
    this.timerAt = deadline;
    this.timer = setTimeout(() => this.fire(), Math.max(0, deadline - performance.now()));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
  }

  /** The watchdog timer: abandon the calls past their deadline, re-arm for the others. */
  private fire(): void {
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    // timers may fire a little early relative to performance.now(): allow 1 ms
    const now = performance.now() + 1;
    let next = Number.POSITIVE_INFINITY;
    // (deleting from a Set while iterating it is safe: abandon() removes the call)
    for (const call of this.calls) {
      if (call.deadline <= now) call.abandon(new ReaderWatchdogError(call.timeoutMs));
      else next = Math.min(next, call.deadline);
    }
    if (next !== Number.POSITIVE_INFINITY) this.arm(next);
  }
}
