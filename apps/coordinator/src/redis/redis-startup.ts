import { ReplyError } from 'ioredis';
import { RedisUnavailableAtStartError } from './redis-unavailable-at-start.error.js';
import { StartupStoppedError } from './startup-stopped.error.js';

/** Replies that mean "not now" rather than "no": the server is loading, busy or failing over. */
const TRANSIENT_REPLY = /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY)\b/;

/** Errors of the step itself (a corrupt record it parsed, a bug): no retry can help. */
const STEP_FAILURES = [SyntaxError, TypeError, RangeError, ReferenceError];

/**
 * Whether `error` says Redis could not be reached (a closed or refused connection, a command
 * dropped after the reconnect attempts) or is not ready yet, as opposed to Redis answering no.
 * A Cluster that reached no node (ioredis `ClusterAllFailedError`) is judged by the last node's
 * error, so a password every node refuses is a refusal too.
 */
export function isRedisUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof ReplyError) return TRANSIENT_REPLY.test(error.message);
  if (STEP_FAILURES.some((type) => error instanceof type)) return false;
  const lastNodeError: unknown = (error as { lastNodeError?: unknown }).lastNodeError;
  if (lastNodeError instanceof Error) return isRedisUnavailable(lastNodeError);
  return true;
}

/**
 * A short reason for a failed attempt: ioredis's "Reached the max retries per request limit"
 * (the command was dropped after the reconnect attempt) says only that there is no connection.
 */
export function unavailableReason(error: Error): string {
  return /max retries per request/i.test(error.message)
    ? 'no connection (refused, closed or timed out)'
    : error.message;
}

/** Options of {@link untilRedisAnswers}. */
export interface StartupRetryOptions {
  /** How long to keep trying; 0 = until Redis answers (no limit). */
  readonly timeoutMs: number;
  /** Where each failed attempt is reported (one line, no stack trace). */
  readonly warn: (message: string) => void;
  /** Pause after the first failed attempt; doubles up to {@link MAX_DELAY_MS}. Default 100 ms. */
  readonly firstDelayMs?: number;
  /** Called with the reason before each pause (readiness shows it). */
  readonly onWaiting?: (reason: string) => void;
  /** Random in [0, 1): the jitter of each pause. Default `Math.random`. */
  readonly random?: () => number;
  /** True once the app shuts down: the step then stops retrying ({@link StartupStoppedError}). */
  readonly stopped?: () => boolean;
}

/** Longest pause between two attempts. */
export const MAX_DELAY_MS = 5000;

/**
 * The pause after failed attempt `attempt` (1, 2, …): `firstDelayMs` doubled per attempt up to
 * {@link MAX_DELAY_MS}, then up to 25 % taken off at random, so replicas started together do not
 * retry in lockstep.
 */
export function startupRetryDelay(attempt: number, firstDelayMs: number, random: number): number {
  const base = Math.min(MAX_DELAY_MS, firstDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.max(1, Math.round(base * (1 - 0.25 * random)));
}

/**
 * Runs a start-up step that reads or writes Redis, again while Redis is unreachable or not ready,
 * until it succeeds, `timeoutMs` is over (then {@link RedisUnavailableAtStartError}; never with
 * `timeoutMs` 0) or the app shuts down (then {@link StartupStoppedError}). A Redis that restarts beside the coordinator (or comes up after it) then delays
 * the start instead of stopping it; an answer that is an error (a refused script, an ACL denial)
 * is thrown at once.
 */
export async function untilRedisAnswers<T>(
  step: string,
  run: () => Promise<T>,
  options: StartupRetryOptions,
): Promise<T> {
  const deadline = options.timeoutMs > 0 ? Date.now() + options.timeoutMs : Infinity;
  const random = options.random ?? Math.random;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isRedisUnavailable(error)) throw error;
      if (options.stopped?.()) throw new StartupStoppedError(step);
      const message = unavailableReason(error as Error);
      const left = deadline - Date.now();
      if (left <= 0) throw new RedisUnavailableAtStartError(options.timeoutMs, step, message);
      const delay = Math.min(
        left,
        startupRetryDelay(attempt, options.firstDelayMs ?? 100, random()),
      );
      const limit =
        deadline === Infinity
          ? 'waiting for it without limit (REDIS_STARTUP_TIMEOUT_MS=0)'
          : `giving up in ${Math.ceil(left / 1000)} s (REDIS_STARTUP_TIMEOUT_MS)`;
      options.warn(
        `${step}: Redis did not answer (attempt ${attempt}: ${message}); ` +
          `next attempt in ${(delay / 1000).toFixed(1)} s, ${limit}`,
      );
      options.onWaiting?.(`waiting for Redis (${step}): ${message}`);
      // Unref'd: the HTTP server keeps the process alive while it waits, nothing once it closed.
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
    }
  }
}
