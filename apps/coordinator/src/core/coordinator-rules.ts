import type { ShardAssignor } from './assignors/shard-assignor.interface.js';

/** The configuration the pure core runs with. */
export interface CoordinatorRules {
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly groupMaxSize: number;
  /** Name of the assignor used when no member names one (must be in `assignors`). */
  readonly defaultAssignor: string;
  readonly assignors: ReadonlyMap<string, ShardAssignor>;
}

/**
 * The assignor a group uses (PROTOCOL.md §9.15): the name most members prefer; a tie goes to the
 * default if it is among the tied names, else the lexicographically first; no preference at all →
 * the default.
 */
export function chooseAssignor(
  preferences: Iterable<string | null>,
  defaultAssignor: string,
): string {
  const votes = new Map<string, number>();
  for (const p of preferences) if (p !== null) votes.set(p, (votes.get(p) ?? 0) + 1);
  if (votes.size === 0) return defaultAssignor;
  const best = Math.max(...votes.values());
  const tied = [...votes].filter(([, n]) => n === best).map(([name]) => name);
  if (tied.includes(defaultAssignor)) return defaultAssignor;
  return tied.sort()[0] as string;
}
