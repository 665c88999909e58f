import { describe, expect, it } from 'vitest';
import { chaosRunBudgetMs, loadChaosConfig } from './harness/chaos-config.js';
import { runChaos } from './harness/chaos-run.js';
import { brokenInvariants } from './harness/chaos-verdict.js';

// The chaos proof in the `ordering: 'key'` profile, bounded for CI: the same cluster, faults and
// checker as chaos.e2e-spec.ts, for 15 s of faults, with every worker handling a shard's keys
// concurrently. The checker then holds each member to one key at a time (not one shard at a
// time); per-key order, no loss and a single owner per shard must hold as before.
// CHAOS_SEED=<n> repeats a run; CHAOS_ORDERING=key runs the full-size suite in this profile.
const config = {
  ...loadChaosConfig({ ...process.env, CHAOS_PROFILE: 'ci', CHAOS_ORDERING: 'key' }),
  durationMs: 15_000,
  quiesceTimeoutMs: 60_000,
};

describe(`chaos (ordering key): seeded faults under keyed load (seed ${config.seed})`, () => {
  it(
    'keeps no loss, per-key order and a single owner per shard with keys handled concurrently',
    async () => {
      const outcome = await runChaos(config);
      const seed = `(CHAOS_SEED=${config.seed})`;
      expect(outcome.failedActions, `fault actions that failed ${seed}`).toEqual([]);
      expect(outcome.unexpectedExits, `members that exited on their own ${seed}`).toEqual([]);
      // (a quarter of the target: a short run's Redis rollback fault and a crowded machine slow the
      // producer; the point here is the checks below)
      expect(outcome.report.counts.produced, `messages produced ${seed}`).toBeGreaterThan(
        (config.durationMs / 1000) * config.ratePerSecond * 0.25,
      );
      const broken = brokenInvariants(
        outcome,
        ['noLoss', 'perKeyOrder', 'singleOwner', 'zombieSafety', 'duplicates'],
        ['noLoss', 'perKeyOrder', 'singleOwner'],
      );
      expect(broken.length, [`broken invariants ${seed}:`, ...broken].join('\n')).toBe(0);
      expect(outcome.report.ok).toBe(true);
      expect(outcome.idleReport.ok).toBe(true);
      expect(outcome.report.counts.deadLetteredUnhandled).toBe(0);
    },
    chaosRunBudgetMs(config),
  );
});
