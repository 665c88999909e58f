import type { RetryBackoffOptions } from '../interfaces/stream-shard-handler-options.interface.js';

/** Backoff options with every field set. */
export type ResolvedBackoff = Required<RetryBackoffOptions>;

/**
 * A source of random numbers in [0, 1), as `Math.random` (the default everywhere; tests inject
 * their own).
 */
export type RandomSource = () => number;

/**
 * The capped exponential ceiling of the delay after `failures` consecutive failures
 * (1 = first failure): `min(maxDelayMs, initialDelayMs × multiplier^(failures − 1))`.
 */
export function backoffCeiling(backoff: ResolvedBackoff, failures: number): number {
  const exponent = Math.max(0, failures - 1);
  const delay = backoff.initialDelayMs * backoff.multiplier ** exponent;
  return Math.min(backoff.maxDelayMs, Number.isFinite(delay) ? delay : backoff.maxDelayMs);
}

/**
 * Full jitter: a delay drawn uniformly from [0, `ceilingMs`]. Every retry and reconnect delay
 * of the library goes through it, so a fleet that failed at the same moment (a Redis or
 * coordinator restart) does not retry in lockstep. A source value outside [0, 1] is clamped.
 */
export function fullJitter(ceilingMs: number, random: RandomSource = Math.random): number {
  const draw = random();
  const share = Number.isFinite(draw) ? Math.min(1, Math.max(0, draw)) : 0;
  // A ceiling that is not a finite number (NaN from a bad computation) waits nothing extra
  // rather than producing a NaN timer delay.
  return Number.isFinite(ceilingMs) ? Math.max(0, ceilingMs) * share : 0;
}

/**
 * The delay before the next try after `failures` consecutive failures (1 = first failure): full
 * jitter over {@link backoffCeiling}, i.e. uniformly random in
 * [0, `min(maxDelayMs, initialDelayMs × multiplier^(failures − 1))`].
 */
export function backoffDelay(
  backoff: ResolvedBackoff,
  failures: number,
  random: RandomSource = Math.random,
): number {
  return fullJitter(backoffCeiling(backoff, failures), random);
}

/**
 * Waits `ms`, or less when `signal` aborts. Resolves `true` when the full delay elapsed and
 * `false` when it was cut short. Never rejects.
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
