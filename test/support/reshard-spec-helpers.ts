import { CoordinatorError } from '../../apps/coordinator/src/core/coordinator-error.js';
import {
  applyObservation,
  beginReshard,
  type GroupObservation,
  markClosed,
  publishLayout,
  type ReshardObservation,
} from '../../apps/coordinator/src/core/streams/reshard-steps.js';
import type { StreamRecord } from '../../apps/coordinator/src/core/streams/stream-record.js';

/**
 * Helpers shared by the reshard specs (not used by the coordinator itself): drive a record
 * through the first steps, build observations.
 */

/** A record resharded to `shards` and published (`closing`), tracking `groups`. */
export function published(
  record: StreamRecord,
  shards: number,
  groups: readonly string[],
  mode: 'strict' | 'relaxed' = 'strict',
): StreamRecord {
  const begun = beginReshard(record, { shards, mode }, 4096, 1000);
  if (begun.kind !== 'started') throw new Error('expected a reshard to start');
  return publishLayout(begun.record, groups, 2000).record;
}

/** A record resharded to `shards`, published and closed (`draining`). */
export function draining(
  record: StreamRecord,
  shards: number,
  groups: readonly string[],
  mode: 'strict' | 'relaxed' = 'strict',
): StreamRecord {
  return markClosed(published(record, shards, groups, mode), 3000).record;
}

/** An observation: `drained` as `[shard, group]` pairs, every listed group active unless said otherwise. */
export function observation(
  drained: ReadonlyArray<readonly [number, string]>,
  groups: Readonly<Record<string, Partial<GroupObservation>>>,
  now = 10_000,
  idleNoticeMs = 1000,
): ReshardObservation {
  const d = new Map<number, Set<string>>();
  for (const [shard, group] of drained) {
    const set = d.get(shard) ?? new Set<string>();
    set.add(group);
    d.set(shard, set);
  }
  const g = new Map<string, GroupObservation>();
  for (const [id, o] of Object.entries(groups))
    g.set(id, { status: o.status ?? 'active', holds: o.holds ?? new Set() });
  return { now, drained: d, groups: g, idleNoticeMs };
}

/** Applies observations in order, returning the final record. */
export function observeAll(
  record: StreamRecord,
  observations: readonly ReshardObservation[],
): StreamRecord {
  let r = record;
  for (const o of observations) r = applyObservation(r, o).record;
  return r;
}

/** The error code `fn` throws (a CoordinatorError), or `undefined`. */
export function refusalCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof CoordinatorError) return error.code;
    throw error;
  }
  return undefined;
}
