import { ChaosConfigError } from './chaos-config.error.js';
import { freshSeed } from './seeded-random.js';

/** Which size of run: `ci` (short, part of `npm test`) or `soak` (long, `npm run soak`). */
export type ChaosProfile = 'ci' | 'soak';

/** Everything that sizes one chaos run (see {@link loadChaosConfig} for the environment). */
export interface ChaosConfig {
  readonly profile: ChaosProfile;
  /** Seeds the fault schedule and the traffic (printed; `CHAOS_SEED` repeats a run). */
  readonly seed: number;
  /** How long faults are injected (the run then quiesces and is checked). */
  readonly durationMs: number;
  /** Mean time between the starts of two faults. */
  readonly meanFaultGapMs: number;
  readonly initialMembers: number;
  /** The schedule never takes the group below this many live members… */
  readonly minMembers: number;
  /** …nor above this many. */
  readonly maxMembers: number;
  readonly shards: number;
  /** Shard counts a reshard picks from (never the current one). */
  readonly reshardTo: readonly number[];
  /** Producer rate (messages per second) and key space. */
  readonly ratePerSecond: number;
  readonly keys: number;
  /**
   * Simulated work per message in the example worker, per member: each member id gets one of
   * these (seeded), so some members always have a handler in flight when a fault hits them.
   */
  readonly handlerDelaysMs: readonly number[];
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  /** How long the quiesce phase may take (reshard done, group stable, everything acked). */
  readonly quiesceTimeoutMs: number;
  /** Keep the run's record files, logs and schedule (`CHAOS_KEEP_FILES=1`). */
  readonly keepFiles: boolean;
  /**
   * The workers' handler `ordering` (`CHAOS_ORDERING`): `shard` (default) or `key` — then the
   * checker checks one key at a time per member instead of one shard at a time.
   */
  readonly ordering: 'shard' | 'key';
  /**
   * Exactly-once profile (`CHAOS_EXACTLY_ONCE=1`): the members run the example worker's
   * exactly-once mode into a PostgreSQL schema of the run's own, and the check also reads the
   * effect table (applied twice and missing must both be 0).
   */
  readonly exactlyOnce: boolean;
  /** How long a coordinator replica or a member may take to start (`CHAOS_READY_TIMEOUT_MS`). */
  readonly readyTimeoutMs: number;
}

const CI: Omit<ChaosConfig, 'seed' | 'keepFiles' | 'ordering' | 'exactlyOnce' | 'readyTimeoutMs'> =
  {
    profile: 'ci',
    durationMs: 70_000,
    // (short enough that every seed's run has every kind: fault-schedule.e2e-spec.ts)
    meanFaultGapMs: 3200,
    initialMembers: 3,
    minMembers: 2,
    maxMembers: 5,
    shards: 8,
    reshardTo: [6, 10, 12],
    ratePerSecond: 250,
    keys: 120,
    handlerDelaysMs: [1, 2, 2, 5, 12],
    heartbeatIntervalMs: 500,
    sessionTimeoutMs: 3000,
    quiesceTimeoutMs: 90_000,
  };

const SOAK: Omit<
  ChaosConfig,
  'seed' | 'keepFiles' | 'ordering' | 'exactlyOnce' | 'readyTimeoutMs'
> = {
  ...CI,
  profile: 'soak',
  durationMs: 10 * 60_000,
  meanFaultGapMs: 3500,
  initialMembers: 4,
  minMembers: 2,
  maxMembers: 6,
  shards: 12,
  reshardTo: [8, 10, 12, 16],
  ratePerSecond: 400,
  keys: 400,
  quiesceTimeoutMs: 180_000,
};

function positiveInt(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new ChaosConfigError(name, raw, 'a positive integer');
  return n;
}

function positiveNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new ChaosConfigError(name, raw, 'a positive number');
  return n;
}

/**
 * The run's size from the environment:
 * - `CHAOS_PROFILE` — `ci` (default: about a minute of faults) or `soak` (`npm run soak`);
 * - `CHAOS_SEED` — a positive integer; default a fresh one (always printed);
 * - `CHAOS_DURATION_MS` — fault-phase length; in the soak profile also `SOAK_MINUTES`
 *   (default 10; `CHAOS_DURATION_MS` wins when both are set);
 * - `CHAOS_RATE` — producer messages per second;
 * - `CHAOS_KEEP_FILES=1` — keep the record files and logs of the run;
 * - `CHAOS_READY_TIMEOUT_MS` — how long a process may take to start (default 60000; raise it on
 *   a crowded machine);
 * - `CHAOS_ORDERING` — the workers' handler ordering, `shard` (default) or `key`.
 * - `CHAOS_EXACTLY_ONCE=1` — the exactly-once profile (needs PostgreSQL, docs/exactly-once.md).
 *
 * @throws ChaosConfigError naming the variable when a value is invalid.
 */
export function loadChaosConfig(env: NodeJS.ProcessEnv = process.env): ChaosConfig {
  const rawProfile = env.CHAOS_PROFILE ?? 'ci';
  if (rawProfile !== 'ci' && rawProfile !== 'soak') {
    throw new ChaosConfigError('CHAOS_PROFILE', rawProfile, '"ci" or "soak"');
  }
  const base = rawProfile === 'soak' ? SOAK : CI;
  const ordering = env.CHAOS_ORDERING ?? 'shard';
  if (ordering !== 'shard' && ordering !== 'key') {
    throw new ChaosConfigError('CHAOS_ORDERING', ordering, '"shard" or "key"');
  }
  const soakMinutes = rawProfile === 'soak' ? positiveNumber(env, 'SOAK_MINUTES') : undefined;
  const durationMs =
    positiveInt(env, 'CHAOS_DURATION_MS') ??
    (soakMinutes !== undefined ? Math.round(soakMinutes * 60_000) : base.durationMs);
  if (durationMs < 10_000) {
    throw new ChaosConfigError('CHAOS_DURATION_MS', String(durationMs), 'at least 10000 (ms)');
  }
  return {
    ...base,
    seed: positiveInt(env, 'CHAOS_SEED') ?? freshSeed(),
    durationMs,
    ratePerSecond: positiveInt(env, 'CHAOS_RATE') ?? base.ratePerSecond,
    keepFiles: env.CHAOS_KEEP_FILES === '1' || env.CHAOS_KEEP_FILES === 'true',
    ordering,
    exactlyOnce: env.CHAOS_EXACTLY_ONCE === '1' || env.CHAOS_EXACTLY_ONCE === 'true',
    readyTimeoutMs: positiveInt(env, 'CHAOS_READY_TIMEOUT_MS') ?? 60_000,
  };
}

/**
 * An upper bound of the run's wall time (start-up, faults, quiesce, check), for the test timeout.
 */
export function chaosRunBudgetMs(config: ChaosConfig): number {
  return config.readyTimeoutMs + config.durationMs * 1.5 + config.quiesceTimeoutMs + 60_000;
}
