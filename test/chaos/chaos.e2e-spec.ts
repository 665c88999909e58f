import { describe, expect, it } from 'vitest';
import { chaosRunBudgetMs, loadChaosConfig } from './harness/chaos-config.js';
import { runChaos } from './harness/chaos-run.js';
import { brokenInvariants } from './harness/chaos-verdict.js';

const config = loadChaosConfig();

// The fault-tolerance proof: real processes on loopback (a restartable Redis with AOF, two
// coordinator replicas, example-worker members behind fronts the harness controls, a keyed
// producer), a seeded fault schedule (printed; CHAOS_SEED=<n> repeats it), then the invariant
// checker over everything the run left behind. `npm run test:chaos` / `npm test` run the CI size;
// `npm run soak` (CHAOS_PROFILE=soak, SOAK_MINUTES) a long one with the same checker.
describe(`chaos: seeded faults under keyed load (${config.profile}, seed ${config.seed})`, () => {
  it(
    'keeps no loss, per-key order, a single owner per shard and zombie safety; duplicates are all explained',
    async () => {
      const outcome = await runChaos(config);
      const seed = `(CHAOS_SEED=${config.seed})`;
      expect(outcome.failedActions, `fault actions that failed ${seed}`).toEqual([]);
      expect(outcome.unexpectedExits, `members that exited on their own ${seed}`).toEqual([]);
      expect(outcome.report.counts.produced, `messages produced ${seed}`).toBeGreaterThan(
        (config.durationMs / 1000) * config.ratePerSecond * 0.5,
      );
      // the idle group (all its members stopped over a reshard, back after the new layout): the
      // old shards it had not read were kept for it, so the same proof holds for it too
      const broken = brokenInvariants(outcome, [
        'noLoss',
        'perKeyOrder',
        'singleOwner',
        'zombieSafety',
        'duplicates',
      ]);
      expect(broken.length, [`broken invariants ${seed}:`, ...broken].join('\n')).toBe(0);
      expect(outcome.report.ok).toBe(true);
      expect(outcome.idleReport.counts.produced).toBe(outcome.report.counts.produced);
      expect(outcome.idleReport.ok).toBe(true);
      expect(outcome.idleReport.counts.deadLetteredUnhandled).toBe(0);
      expect(outcome.schedule.faults.some((f) => f.kind === 'idle-group-reshard')).toBe(true);
      // no message dead-lettered without ever being handled: the run has no poison messages, and
      // term-member SIGTERMs example workers whose record file (a provider's resource) closes in
      // onModuleDestroy — the drain must finish before it, so a graceful stop dead-letters nothing
      expect(
        outcome.report.counts.deadLetteredUnhandled,
        `dead-lettered, never handled ${seed}`,
      ).toBe(0);
      // the schedule really exercised the group: members came and went, shards changed hands
      expect(outcome.schedule.faults.length).toBeGreaterThanOrEqual(
        Math.floor((config.durationMs / config.meanFaultGapMs) * 0.5),
      );
      expect(outcome.report.counts.handOffs).toBeGreaterThan(0);
    },
    chaosRunBudgetMs(config),
  );
});
