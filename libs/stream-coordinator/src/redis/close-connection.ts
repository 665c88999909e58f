import type { ReaderRedis } from './redis-connection.types.js';

/**
 * Emitted on a connection once {@link closeConnection} has closed it for good. Owners that track
 * connections forget it then: a connection disconnected while ioredis was reconnecting it never
 * emits `end` (it stays `reconnecting`, inert — no socket, no timer).
 *
 * @internal
 */
export const CONNECTION_CLOSED_EVENT = 'rsc:closed';

/** How long a graceful `QUIT` may take before the connection is dropped. */
export const QUIT_TIMEOUT_MS = 1000;

/**
 * Closes `connection`: a `QUIT` when it is ready (waiting at most `quitTimeoutMs` for the
 * answer), then a disconnect in every case. A connection that is not ready is only disconnected:
 * a `QUIT` would wait in its offline queue, and one that ioredis left in `reconnecting` after an
 * earlier `disconnect()` never gets ready again. Either way it then emits
 * {@link CONNECTION_CLOSED_EVENT}.
 *
 * @internal
 */
export async function closeConnection(
  connection: ReaderRedis,
  quitTimeoutMs = QUIT_TIMEOUT_MS,
): Promise<void> {
  if (connection.status !== 'ready') {
    connection.disconnect();
    connection.emit(CONNECTION_CLOSED_EVENT);
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      connection.quit().catch(() => undefined),
      new Promise((resolve) => {
        timer = setTimeout(resolve, quitTimeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    connection.disconnect();
    connection.emit(CONNECTION_CLOSED_EVENT);
  }
}
