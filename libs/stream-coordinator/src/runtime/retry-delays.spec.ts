import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { heartbeatRetryDelay, memberIdRetryDelay } from './retry-delays.js';

const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });
/** Distinct draws of a fleet (far enough apart to stay distinct once scaled). */
const fleet = fc.uniqueArray(
  fc.integer({ min: 0, max: 999_999 }).map((n) => n / 1e6),
  { minLength: 2, maxLength: 20 },
);

describe('member runtime retry delays (full jitter)', () => {
  it('member id: within [0, min(5 s, 100 ms × 2^attempt)]; draws apart, delays apart', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), unit, fleet, (attempt, r, draws) => {
        const ceiling = Math.min(5000, 100 * 2 ** attempt);
        const delay = memberIdRetryDelay(attempt, () => r);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThanOrEqual(ceiling);
        const delays = draws.map((d) => memberIdRetryDelay(attempt, () => d));
        expect(new Set(delays).size).toBe(draws.length);
      }),
    );
  });

  it('heartbeat: a transient failure retries within [0, min(interval, 50 ms × 2^min(n, 6))]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 1, max: 60_000 }),
        unit,
        fleet,
        (failures, interval, r, draws) => {
          const ceiling = Math.min(interval, 50 * 2 ** Math.min(failures, 6));
          const delay = heartbeatRetryDelay('transient', failures, interval, () => r);
          expect(delay).toBeGreaterThanOrEqual(0);
          expect(delay).toBeLessThanOrEqual(ceiling);
          const delays = draws.map((d) =>
            heartbeatRetryDelay('transient', failures, interval, () => d),
          );
          expect(new Set(delays).size).toBe(draws.length);
        },
      ),
    );
  });

  it('heartbeat: a refused one waits at least the interval, plus [0, min(30 s, 1 s × 2^min(n, 5))]', () => {
    // a refused heartbeat (bad config, instance id held, group full) never goes again sooner
    // than the heartbeat interval: the floor it had before jitter
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: 1, max: 60_000 }),
        unit,
        fleet,
        (failures, interval, r, draws) => {
          const backoff = Math.min(30_000, 1000 * 2 ** Math.min(failures, 5));
          const delay = heartbeatRetryDelay('refused', failures, interval, () => r);
          expect(delay).toBeGreaterThanOrEqual(interval);
          expect(delay).toBeLessThanOrEqual(interval + backoff);
          const delays = draws.map((d) =>
            heartbeatRetryDelay('refused', failures, interval, () => d),
          );
          expect(new Set(delays).size).toBe(draws.length);
        },
      ),
    );
  });

  it('with the default source, members that failed together spread out', () => {
    const delays = Array.from({ length: 200 }, () => heartbeatRetryDelay('transient', 6, 3000));
    expect(new Set(delays).size).toBeGreaterThan(190);
    expect(Math.min(...delays)).toBeLessThan(0.25 * 3000);
    expect(Math.max(...delays)).toBeGreaterThan(0.75 * 3000);
  });
});
