import type { ShardAssignor } from './assignors/shard-assignor.interface.js';

/** The configuration the pure core runs with. */
export interface CoordinatorRules {
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly groupMaxSize: number;
  /** Groups the coordinator holds at most (`MAX_GROUPS`); unbounded when absent. */
  readonly maxGroups?: number;
  /** Name of the assignor used when no member names one (must be in `assignors`). */
  readonly defaultAssignor: string;
  readonly assignors: ReadonlyMap<string, ShardAssignor>;
}

/**
 * The assignor a group uses (docs/protocol.md §5.2): the name most members prefer; a tie goes to
 * the default if it is among the tied names, else the lexicographically first; no preference at
 * all → the default.
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

/** The assignor a recompute runs, and the group's choice it replaces when that one is missing. */
export interface ResolvedAssignor {
  readonly name: string;
  readonly assignor: ShardAssignor;
  /** The name the group chose when this replica has no assignor of that name, else `null`. */
  readonly unavailable: string | null;
}

/**
 * The assignor to run for a group: its choice ({@link chooseAssignor}) when this replica has it,
 * else the default. A member's preference is checked when it is sent, but it stays stored after
 * the assignor is removed from the deployment (or on a replica started without it): refusing to
 * recompute would wedge the group — no join, leave or expiry could commit.
 */
export function resolveAssignor(
  preferences: Iterable<string | null>,
  rules: Pick<CoordinatorRules, 'defaultAssignor' | 'assignors'>,
): ResolvedAssignor {
  const chosen = chooseAssignor(preferences, rules.defaultAssignor);
  const assignor = rules.assignors.get(chosen);
  if (assignor) return { name: chosen, assignor, unavailable: null };
  const fallback = rules.assignors.get(rules.defaultAssignor);
  if (!fallback) throw new Error(`default assignor ${rules.defaultAssignor} is not configured`);
  return { name: rules.defaultAssignor, assignor: fallback, unavailable: chosen };
}
