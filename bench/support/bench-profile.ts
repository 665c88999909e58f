/** Sizes of one benchmark run: `quick` (default, a few minutes) or `full` (`--full`). */
export interface BenchProfile {
  readonly name: 'quick' | 'full';
  /** Runs per measured case (the report gives medians). */
  readonly reps: number;
  /**
   * Back-to-back pairs (ours, raw loop) per throughput case: a drain at batch 100 lasts a
   * fraction of a second, so single pairs swing with whatever else the two cores run.
   */
  readonly throughputReps: number;
  /** Prefilled messages per throughput run. */
  readonly messages: number;
  /**
   * Throughput warm-up: unmeasured drains per side before the measured ones, until every
   * consumer process has read at least this many batches (so four processes warm up as long as
   * one does, and batch 100 as long as batch 1, in read turns).
   */
  readonly warmupBatchesPerProcess: number;
  /** Cold throughput: messages of the one drain fresh processes make, and repetitions. */
  readonly coldMessages: number;
  readonly coldReps: number;
  /** Prefilled messages per peer run (@moleculer/channels, BullMQ). */
  readonly peerMessages: number;
  /** Batch sizes of the throughput matrix. */
  readonly batchSizes: readonly number[];
  /** Member (and raw) process counts of the throughput matrix. */
  readonly processCounts: readonly number[];
  /** Latency: publish rates and measured seconds per run. */
  readonly latencyRates: readonly number[];
  readonly latencySeconds: number;
  /** Rebalance: join/leave repetitions, crash repetitions, session timeout. */
  readonly rebalanceReps: number;
  readonly crashReps: number;
  readonly sessionTimeoutMs: number;
  /** Coordinator: member counts, seconds per load phase. */
  readonly memberCounts: readonly number[];
  readonly loadSeconds: number;
}

/** The default profile: every scenario, fewer repetitions and messages. */
export const QUICK_PROFILE: BenchProfile = {
  name: 'quick',
  reps: 3,
  throughputReps: 5,
  messages: 30_000,
  warmupBatchesPerProcess: 1000,
  coldMessages: 300_000,
  coldReps: 1,
  peerMessages: 20_000,
  batchSizes: [100, 10, 1],
  processCounts: [1, 4],
  latencyRates: [1000, 10_000],
  latencySeconds: 3,
  rebalanceReps: 3,
  crashReps: 1,
  sessionTimeoutMs: 6000,
  memberCounts: [1000, 5000, 10_000],
  loadSeconds: 4,
};

/** `--full`: the sizes (100,000 messages) and more repetitions. */
export const FULL_PROFILE: BenchProfile = {
  name: 'full',
  reps: 5,
  throughputReps: 9,
  messages: 100_000,
  warmupBatchesPerProcess: 4000,
  coldMessages: 300_000,
  coldReps: 3,
  peerMessages: 100_000,
  batchSizes: [100, 10, 1],
  processCounts: [1, 4],
  latencyRates: [1000, 10_000],
  latencySeconds: 10,
  rebalanceReps: 5,
  crashReps: 3,
  sessionTimeoutMs: 10_000,
  memberCounts: [1000, 5000, 10_000],
  loadSeconds: 10,
};
