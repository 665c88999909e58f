import type { GroupModel } from './group-model.js';

/**
 * The part of the members' previous targets that can still stand: shards that exist, of streams the
 * member still subscribes to, each claimed by at most one member.
 */
export interface PreviousOwnership {
  /** Per stream: the member index owning each shard position, -1 for none. */
  readonly owners: readonly Int32Array[];
  /** Per member: stream index → shard positions it held before, ascending. */
  readonly held: readonly Map<number, number[]>[];
  /** Per member: number of shards in {@link held}. */
  readonly heldTotal: readonly number[];
}

/**
 * Resolves the previous targets against the current input. Stale entries are dropped: shards or
 * streams that no longer exist and streams the member no longer subscribes to. When previous
 * targets overlap (which a consistent coordinator never produces, but a replaced static member or a
 * restored snapshot might), the member with the smallest member id keeps the shard.
 */
export function resolvePreviousTargets(model: GroupModel): PreviousOwnership {
  const owners = model.streams.map((s) => new Int32Array(s.shards.length).fill(-1));
  const streamIndex = new Map<string, number>();
  model.streams.forEach((s, t) => streamIndex.set(s.name, t));
  const held: Map<number, number[]>[] = [];
  const heldTotal: number[] = [];
  model.members.forEach((member, i) => {
    const mine = new Map<number, number[]>();
    let total = 0;
    const subscribed = model.subscriptions[i] ?? [];
    if (subscribed.length > 0) {
      const subscribedSet = new Set(subscribed);
      for (const [name, ids] of member.previousTarget) {
        const t = streamIndex.get(name);
        if (t === undefined || !subscribedSet.has(t)) continue;
        const stream = model.streams[t];
        const streamOwners = owners[t];
        if (!stream || !streamOwners) continue;
        const positions: number[] = [];
        for (const id of ids) {
          const p = stream.indexOf(id);
          if (p < 0 || streamOwners[p] !== -1) continue;
          streamOwners[p] = i;
          positions.push(p);
        }
        if (positions.length > 0) {
          positions.sort((a, b) => a - b);
          mine.set(t, positions);
          total += positions.length;
        }
      }
    }
    held.push(mine);
    heldTotal.push(total);
  });
  return { owners, held, heldTotal };
}
