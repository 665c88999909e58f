import { describe, expect, it } from 'vitest';
import { backoffDelay, sleep } from './backoff.js';

describe('backoffDelay', () => {
  const backoff = { initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2 };

  it('grows by the multiplier from the initial delay and caps at the maximum', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(backoff, n))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
  });

  it('treats 0 failures like the first and survives huge exponents', () => {
    expect(backoffDelay(backoff, 0)).toBe(100);
    expect(backoffDelay(backoff, 10_000)).toBe(1000);
    expect(backoffDelay({ ...backoff, multiplier: 1 }, 7)).toBe(100);
  });
});

describe('sleep', () => {
  it('resolves true after the delay, false at once when aborted', async () => {
    expect(await sleep(1)).toBe(true);
    const controller = new AbortController();
    const pending = sleep(60_000, controller.signal);
    controller.abort();
    expect(await pending).toBe(false);
    expect(await sleep(60_000, controller.signal)).toBe(false);
  });
});
