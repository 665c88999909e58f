import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configArb, opArb } from '../../../../test/support/protocol-arbitraries.js';
import { newCoverage, Run } from '../../../../test/support/protocol-model.js';

/**
 * Random protocol runs against the pure core, driven like the service drives it (one transaction
 * per request, committed only when it succeeds), with member processes that behave like real
 * members (the model: `test/support/protocol-model.ts`). Every step is checked against the
 * protocol's invariants (a)–(e) and the client-side safety property (no two processes ever work
 * on one shard); every run ends with a quiesce phase that must converge (f). Both assignors run:
 * the harness's round-robin and the real `uniform` (balance checked on homogeneous groups).
 *
 * `RUNS=5000 npx vitest run <this file>` for a longer search; `COVERAGE_STATS=1` prints what the
 * runs exercised.
 */

const RUNS = Number(process.env.RUNS ?? 800);

describe('group protocol properties (random runs of real-behaving members)', () => {
  it(
    `keeps every invariant at every step and converges when members behave (${RUNS} runs)`,
    { timeout: Math.max(30_000, RUNS * 20) },
    () => {
      const stats = newCoverage();
      fc.assert(
        fc.property(configArb, fc.array(opArb, { maxLength: 60, size: 'max' }), (cfg, ops) => {
          const run = new Run(cfg, stats);
          for (const op of ops) {
            run.step(op);
            run.checkInvariants();
          }
          run.quiesce();
        }),
        { numRuns: RUNS },
      );
      if (process.env.COVERAGE_STATS) console.log({ ...stats, codes: [...stats.codes].sort() });
      // The generator must keep reaching every path the invariants are about.
      expect([...stats.codes].sort()).toEqual([
        'FENCED_MEMBER_EPOCH',
        'GROUP_ID_NOT_FOUND',
        'GROUP_MAX_SIZE_REACHED',
        'UNKNOWN_MEMBER_ID',
        'UNRELEASED_INSTANCE_ID',
      ]);
      for (const key of [
        'staleAccepted',
        'unrevoked',
        'unreleased',
        'replaced',
        'temporaryLeaves',
        'leaves',
        'removals',
        'restarts',
        'reshards',
      ] as const) {
        expect(stats[key], key).toBeGreaterThan(0);
      }
    },
  );
});
