import type { RedisConnection } from './redis-connection.types.js';

/**
 * `call`, or a rejection once `timeoutMs` passed without an answer (`<what> did not answer
 * within <timeoutMs> ms`), so a hung Redis turns a health check `down` instead of hanging it.
 *
 * @internal
 */
export function withTimeout<T>(call: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    call,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${what} did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * `PING` on `connection`, bounded by `timeoutMs`: the reachability probe of the member's and the
 * coordinator's Redis health checks.
 *
 * @internal
 */
export async function pingRedis(connection: RedisConnection, timeoutMs: number): Promise<void> {
  await withTimeout(connection.ping(), timeoutMs, 'PING');
}

/** The `reason` a health check reports when {@link pingRedis} failed. @internal */
export function unreachableReason(error: unknown): string {
  return `Redis unreachable: ${error instanceof Error ? error.message : String(error)}`;
}
