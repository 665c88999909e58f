import type { RetryBackoffOptions } from '../interfaces/stream-shard-handler-options.interface.js';

/** Backoff options with every field set. @publicApi */
export type ResolvedBackoff = Required<RetryBackoffOptions>;

/**
 * The delay before the next try after `failures` consecutive failures (1 = first failure):
 * `min(maxDelayMs, initialDelayMs × multiplier^(failures − 1))`.
 *
 * @publicApi
 */
export function backoffDelay(backoff: ResolvedBackoff, failures: number): number {
  const exponent = Math.max(0, failures - 1);
  const delay = backoff.initialDelayMs * backoff.multiplier ** exponent;
  return Math.min(backoff.maxDelayMs, Number.isFinite(delay) ? delay : backoff.maxDelayMs);
}

/**
 * Waits `ms`, or less when `signal` aborts. Resolves `true` when the full delay elapsed and
 * `false` when it was cut short. Never rejects.
 *
 * @publicApi
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
