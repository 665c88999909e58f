import { fullJitter, type RandomSource } from '../data-plane/backoff.js';

/**
 * The member runtime's retry delays (pure). Each is full jitter — uniformly random in
 * [0, a capped exponential] — so that members which failed together (a coordinator restart, a
 * network blip) do not retry in lockstep.
 */

/** Before asking the coordinator for a member id again after `attempt` failures (0 = first). */
export function memberIdRetryDelay(attempt: number, random: RandomSource = Math.random): number {
  return fullJitter(Math.min(5000, 100 * 2 ** Math.max(0, attempt)), random);
}

/**
 * Before the next heartbeat after `failures` consecutive failures (1 = first) with heartbeat
 * interval `intervalMs`: a `transient` failure (coordinator unavailable, network) retries within
 * [0, min(interval, 50 ms × 2^min(failures, 6))]; a `refused` one (bad config, instance id
 * held, group full) waits the interval — never sooner, as before jitter — plus
 * [0, min(30 s, 1 s × 2^min(failures, 5))].
 */
export function heartbeatRetryDelay(
  kind: 'transient' | 'refused',
  failures: number,
  intervalMs: number,
  random: RandomSource = Math.random,
): number {
  if (kind === 'refused') {
    return intervalMs + fullJitter(Math.min(30_000, 1000 * 2 ** Math.min(failures, 5)), random);
  }
  return fullJitter(Math.min(intervalMs, 50 * 2 ** Math.min(failures, 6)), random);
}
