import type pg from 'pg';
import type { ProducedMessage, RedisRollback } from './invariants/index.js';

/** What the exactly-once check found in the `order_effects` table. */
export interface EffectsReport {
  /** Effect rows in all. */
  readonly rows: number;
  /** Entries with more than one effect row (must be 0). */
  readonly appliedTwice: ReadonlyArray<{ shard: number; id: string; count: number }>;
  /** Produced entries neither applied nor dead-lettered (must be 0). */
  readonly missing: ReadonlyArray<{ shard: number; id: string }>;
  /** Effect rows of entries nobody produced, as far as the producer knows (must be 0). */
  readonly unexpected: ReadonlyArray<{ shard: number; id: string }>;
  /** Dead-lettered entries that have an effect row anyway (must be 0). */
  readonly deadLetteredButApplied: number;
  /** Produced entries a Redis rollback erased before any member applied them. */
  readonly lostByRedis: number;
  /** Produced entries a Redis rollback erased after a member applied them (once). */
  readonly appliedBeforeLoss: number;
}

/** What the effect rows are compared with. */
export interface EffectsCheckInput {
  readonly produced: readonly ProducedMessage[];
  /** Dead-lettered entries: they must have no effect row. */
  readonly deadLettered?: ReadonlyArray<{ readonly shard: number; readonly id: string }>;
  /** The run's Redis rollbacks (lost writes). */
  readonly redisRollbacks?: readonly RedisRollback[];
  /** Produced entries whose `XADD` a rollback erased (the invariant input's `lostByRedis`). */
  readonly lostByRedis?: ReadonlyArray<{ readonly shard: number; readonly id: string }>;
}

/** One entry's effect rows. */
export interface EffectRowCount {
  readonly shard: number;
  readonly entry_id: string;
  readonly n: number;
}

/**
 * Reads `order_effects` (the example worker's exactly-once mode) and compares it with what was
 * produced ({@link classifyEffects}). `group`: only that consumer group's rows (several groups
 * may share the table).
 */
export async function checkEffects(
  db: pg.Pool,
  input: EffectsCheckInput,
  group?: string,
): Promise<EffectsReport> {
  const { rows } = await db.query<EffectRowCount>(
    'SELECT shard, entry_id, count(*)::int AS n FROM order_effects WHERE $1::text IS NULL OR consumer_group = $1 GROUP BY shard, entry_id',
    [group ?? null],
  );
  return classifyEffects(rows, input);
}

/**
 * A write Redis executed up to this long before a rollback's `snapshotAt` may still be missing
 * from the copy (the clock was read before the copy began), so its entry may have been lost.
 */
export const SNAPSHOT_SLACK_MS = 50;

/**
 * Every produced entry has exactly one effect row, except the dead-lettered ones, which have
 * none, and the ones a Redis rollback erased: `lostByRedis` lists entries whose `XADD` Redis
 * acknowledged and then lost with its last writes, which no member of any group can read
 * afterwards. Such an entry has one row if a member applied it before the loss
 * (`appliedBeforeLoss`), none otherwise (`lostByRedis`), never two. It counts as erased only when
 * its id (Redis' clock when it wrote it) lies in a rollback's window, from the snapshot to the
 * kill: an entry outside every window (say, one written after the restart and skipped as applied)
 * stays `missing`, whatever the list says.
 */
export function classifyEffects(
  rows: readonly EffectRowCount[],
  input: EffectsCheckInput,
): EffectsReport {
  const counts = new Map(rows.map((r) => [`${r.shard}/${r.entry_id}`, r.n]));
  const dead = new Set((input.deadLettered ?? []).map((d) => `${d.shard}/${d.id}`));
  const rollbacks = input.redisRollbacks ?? [];
  const erased = new Set(
    (input.lostByRedis ?? [])
      .filter(({ id }) => {
        const ms = Number(id.split('-')[0]);
        return rollbacks.some((r) => ms >= r.snapshotAt - SNAPSHOT_SLACK_MS && ms <= r.killedAt);
      })
      .map((l) => `${l.shard}/${l.id}`),
  );
  const appliedTwice = rows
    .filter((r) => r.n > 1)
    .map((r) => ({ shard: r.shard, id: r.entry_id, count: r.n }));
  const missing: Array<{ shard: number; id: string }> = [];
  let lostByRedis = 0;
  let appliedBeforeLoss = 0;
  for (const p of input.produced) {
    const key = `${p.shard}/${p.id}`;
    const applied = counts.has(key);
    if (erased.has(key)) {
      if (applied) appliedBeforeLoss++;
      else lostByRedis++;
    } else if (!applied && !dead.has(key)) missing.push({ shard: p.shard, id: p.id });
  }
  const deadLetteredButApplied = [...dead].filter((key) => counts.has(key)).length;
  const produced = new Set(input.produced.map((p) => `${p.shard}/${p.id}`));
  const unexpected = rows
    .filter((r) => !produced.has(`${r.shard}/${r.entry_id}`))
    .map((r) => ({ shard: r.shard, id: r.entry_id }));
  return {
    rows: rows.reduce((sum, r) => sum + r.n, 0),
    appliedTwice,
    missing,
    unexpected,
    deadLetteredButApplied,
    lostByRedis,
    appliedBeforeLoss,
  };
}

/** One line for a test's output. */
export function formatEffectsReport(report: EffectsReport): string {
  return `exactly-once effects: ${report.rows} rows, applied twice ${report.appliedTwice.length}, missing ${report.missing.length}, not produced ${report.unexpected.length}, dead-lettered but applied ${report.deadLetteredButApplied}${report.lostByRedis + report.appliedBeforeLoss > 0 ? `; erased by a Redis rollback ${report.lostByRedis} (applied before the loss ${report.appliedBeforeLoss})` : ''}`;
}
