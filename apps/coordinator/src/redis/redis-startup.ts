import { ReplyError } from 'ioredis';
import { RedisUnavailableAtStartError } from './redis-unavailable-at-start.error.js';

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

/** Options of {@link untilRedisAnswers}. */
export interface StartupRetryOptions {
  /** How long to keep trying; 0 = one attempt. */
  readonly timeoutMs: number;
  /** Where each failed attempt is reported. */
  readonly warn: (message: string) => void;
  /** Pause between attempts (doubling up to 2 s). Default 100 ms. */
  readonly firstDelayMs?: number;
}

/**
 * Runs a start-up step that reads or writes Redis, again while Redis is unreachable or not ready,
 * until it succeeds or `timeoutMs` is over (then {@link RedisUnavailableAtStartError}). A Redis
 * that restarts beside the coordinator (or comes up after it) then delays the start instead of
 * stopping it; an answer that is an error (a refused script, an ACL denial) is thrown at once.
 */
export async function untilRedisAnswers<T>(
  step: string,
  run: () => Promise<T>,
  options: StartupRetryOptions,
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let delay = options.firstDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (!isRedisUnavailable(error)) throw error;
      const message = (error as Error).message;
      const left = deadline - Date.now();
      if (left <= 0) throw new RedisUnavailableAtStartError(options.timeoutMs, step, message);
      options.warn(
        `${step}: Redis did not answer (attempt ${attempt}: ${message}); ` +
          `trying again for up to ${Math.ceil(left / 1000)} s more (REDIS_STARTUP_TIMEOUT_MS)`,
      );
      await new Promise((resolve) => setTimeout(resolve, Math.min(delay, left)));
      delay = Math.min(delay * 2, 2000);
    }
  }
}
