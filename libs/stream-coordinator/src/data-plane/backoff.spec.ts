import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay, fullJitter, sleep } from './backoff.js';

const backoffs = fc
  .record({
    initialDelayMs: fc.integer({ min: 0, max: 10_000 }),
    extra: fc.integer({ min: 0, max: 60_000 }),
    multiplier: fc.double({ min: 1, max: 10, noNaN: true }),
  })
  .map(({ initialDelayMs, extra, multiplier }) => ({
    initialDelayMs,
    maxDelayMs: initialDelayMs + extra,
    multiplier,
  }));
/** A random source that returns the given draws in turn. */
const draws = (values: readonly number[]): (() => number) => {
  let i = 0;
  return () => values[i++ % values.length] as number;
};
const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('backoffCeiling', () => {
  const backoff = { initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2 };

  it('grows by the multiplier from the initial delay and caps at the maximum', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffCeiling(backoff, n))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
  });

  it('treats 0 failures like the first and survives huge exponents', () => {
    expect(backoffCeiling(backoff, 0)).toBe(100);
    expect(backoffCeiling(backoff, 10_000)).toBe(1000);
    expect(backoffCeiling({ ...backoff, multiplier: 1 }, 7)).toBe(100);
  });
});

describe('backoffDelay (full jitter)', () => {
  it('is the ceiling scaled by the random draw: always within [0, capped exponential]', () => {
    fc.assert(
      fc.property(backoffs, fc.integer({ min: 0, max: 2000 }), unit, (backoff, failures, r) => {
        const ceiling = backoffCeiling(backoff, failures);
        const delay = backoffDelay(backoff, failures, () => r);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
        expect(delay).toBeLessThanOrEqual(backoff.maxDelayMs);
        expect(delay).toBeCloseTo(ceiling * r, 6);
      }),
    );
  });

  it('not lockstep: members that failed together and draw differently wait differently', () => {
    fc.assert(
      fc.property(
        backoffs.filter((b) => b.initialDelayMs > 0),
        fc.integer({ min: 1, max: 50 }),
        fc.uniqueArray(
          fc.integer({ min: 0, max: 999_999 }).map((n) => n / 1e6),
          { minLength: 2, maxLength: 20 },
        ),
        (backoff, failures, fleet) => {
          const delays = fleet.map((r) => backoffDelay(backoff, failures, () => r));
          expect(new Set(delays).size).toBe(fleet.length);
        },
      ),
    );
  });

  it('with the default source, a fleet spreads over the whole range', () => {
    const backoff = { initialDelayMs: 1000, maxDelayMs: 1000, multiplier: 2 };
    const delays = Array.from({ length: 500 }, () => backoffDelay(backoff, 3));
    expect(Math.min(...delays)).toBeLessThan(200);
    expect(Math.max(...delays)).toBeGreaterThan(800);
    expect(new Set(delays).size).toBeGreaterThan(450);
  });

  it('clamps a source outside [0, 1] and never returns a negative delay', () => {
    fc.assert(
      fc.property(fc.double(), fc.double({ min: -1000, max: 100_000 }), (draw, ceiling) => {
        const delay = fullJitter(ceiling, draws([draw]));
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(Number.isNaN(ceiling) ? 0 : Math.max(0, ceiling));
      }),
    );
    expect(fullJitter(Number.NaN, draws([0.5]))).toBe(0);
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
