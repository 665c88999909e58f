import { WaitTimeoutError } from './wait-timeout.error.js';

export { WaitTimeoutError } from './wait-timeout.error.js';

/**
 * The one polling module of the tests and benchmarks: wait for a condition, not for time. No
 * vitest import, so `bench/` and `scripts/` use it too.
 */

/** How long to wait, how often to look, and what for. */
export interface WaitOptions {
  /** Give up after this long (checked after each look, so the last look may end a bit later). */
  readonly timeoutMs: number;
  /** Pause between two looks; 50 ms unless given. */
  readonly intervalMs?: number;
  /**
   * What is awaited, for the timeout error ("timed out after N ms waiting for <message>"). A
   * function is called only when the wait fails, so it can describe the state at that moment.
   */
  readonly message: string | (() => string);
  /**
   * A look that throws counts as "not yet" and its error goes into the timeout message
   * (for conditions that read a server which may be restarting). Without it the error ends the
   * wait at once.
   */
  readonly retryErrors?: boolean;
}

/** One look: done with a value, or not yet with what is still wrong (for the timeout message). */
type Look<T> =
  { readonly done: true; readonly value: T } | { readonly done: false; readonly last?: string };

async function poll<T>(look: () => Promise<Look<T>>, options: WaitOptions): Promise<T> {
  const started = Date.now();
  const deadline = started + options.timeoutMs;
  for (;;) {
    let last: string | undefined;
    try {
      const result = await look();
      if (result.done) return result.value;
      last = result.last;
    } catch (error) {
      if (!options.retryErrors) throw error;
      last = `last error: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (Date.now() > deadline) {
      const what = typeof options.message === 'string' ? options.message : options.message();
      throw new WaitTimeoutError(what, options.timeoutMs, last);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
  }
}

/** Polls `condition` until it holds; resolves with the milliseconds it took. */
export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  options: WaitOptions,
): Promise<number> {
  const started = Date.now();
  return poll<number>(
    async () =>
      (await condition()) ? { done: true, value: Date.now() - started } : { done: false },
    options,
  );
}

/**
 * Polls `read` until `done` holds for its value and returns that value; the timeout error shows
 * the last value read.
 */
export async function pollUntil<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: WaitOptions,
): Promise<T> {
  return poll(async () => {
    const value = await read();
    return done(value)
      ? { done: true, value }
      : { done: false, last: `last value: ${JSON.stringify(value)}` };
  }, options);
}

/** Polls `read` until it returns something other than `undefined`, and returns that. */
export async function waitForValue<T>(
  read: () => T | undefined | Promise<T | undefined>,
  options: WaitOptions,
): Promise<T> {
  return poll<T>(async () => {
    const value = await read();
    return value === undefined ? { done: false } : { done: true, value };
  }, options);
}

/**
 * Polls `probe` until it reports no problem (`null` or an empty list); the timeout error lists
 * the last problems found (at most 20), so a failed wait says what was still wrong.
 */
export async function waitForNoProblems(
  probe: () => string | null | readonly string[] | Promise<string | null | readonly string[]>,
  options: WaitOptions,
): Promise<void> {
  await poll<void>(async () => {
    const found = await probe();
    const problems = found === null ? [] : typeof found === 'string' ? [found] : found;
    return problems.length === 0
      ? { done: true, value: undefined }
      : { done: false, last: problems.slice(0, 20).join('\n  ') };
  }, options);
}

/**
 * Resolves after `ms`: only where a fixed duration is the point (an outage of a given length, or
 * a bounded wait past the moment something must not happen).
 */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
