import type { Redis } from 'ioredis';
import { pollUntil } from './wait.js';
import { connectRedis } from './redis-client.js';

/** Outcome of {@link probeRedis}: `ok`, or why no Redis answered. */
export type RedisProbeResult = { ok: true } | { ok: false; reason: string };

/** Default bound of one probe: a closed port fails at once, an unreachable host after this. */
export const DEFAULT_PROBE_TIMEOUT_MS = 2000;

/**
 * Connects to `url` once (no retries, no offline queue) and sends PING. Never takes longer than
 * `timeoutMs`: a refused connection fails at once, a black-holed host when the timer fires.
 */
export async function probeRedis(
  url: string,
  timeoutMs = DEFAULT_PROBE_TIMEOUT_MS,
): Promise<RedisProbeResult> {
  let client: Redis;
  try {
    client = connectRedis(url, {
      lazyConnect: true,
      connectTimeout: timeoutMs,
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      enableReadyCheck: false,
    });
  } catch (error) {
    return { ok: false, reason: `invalid Redis URL (${describe(error)})` };
  }
  let lastError: unknown;
  client.on('error', (error: unknown) => {
    lastError = error;
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<RedisProbeResult>((resolve) => {
    timer = setTimeout(
      () => resolve({ ok: false, reason: `no answer within ${timeoutMs} ms` }),
      timeoutMs,
    );
  });
  const attempt = (async (): Promise<RedisProbeResult> => {
    try {
      await client.connect();
      await client.ping(); // an error reply (NOAUTH, LOADING...) rejects
      return { ok: true };
    } catch (error) {
      return { ok: false, reason: describe(lastError ?? error) };
    }
  })();
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
    client.disconnect();
  }
}

/**
 * Polls {@link probeRedis} until Redis at `url` answers, or throws after `timeoutMs` with the
 * last failure reason.
 */
export async function waitForRedis(url: string, timeoutMs = 10_000): Promise<void> {
  await pollUntil(
    () => probeRedis(url, Math.min(DEFAULT_PROBE_TIMEOUT_MS, timeoutMs)),
    (result) => result.ok,
    { timeoutMs, message: `Redis at ${url} to answer` },
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
