import type { Assignment } from '../assignment.js';
import { type ExtraDemand, planExtraShards } from './extra-shard-planner.js';
import { type GroupModel, toAssignment } from './group-model.js';
import type { PreviousOwnership } from './previous-ownership.js';

/**
 * The uniform assignment when every member in `active` subscribes to the same streams.
 *
 * With `M` members and `P_t` shards in stream `t` (`P = Σ P_t`), every member gets
 * `floor(P_t/M)` or `floor(P_t/M) + 1` shards of each stream `t`, and `floor(P/M)` or
 * `floor(P/M) + 1` shards in total. Both hold at once: {@link planExtraShards} chooses the
 * `P_t mod M` members that take the `+1` of each stream so that each member takes the `+1` of
 * `floor(R/M)` or `ceil(R/M)` streams (`R = Σ (P_t mod M)`).
 *
 * Stickiness, within that balance: each member keeps its previous shards of a stream up to its
 * quota there (lowest shard ids first), and the planner places the `+1`s where they keep the most
 * previous shards — so the result moves the fewest shards any assignment with this balance could.
 * Released and unowned shards go, in ascending id order, to members below their quota, in member id
 * order. Consumes `ownership.owners`.
 *
 * @param active Indices (into `model.members`) of the members that subscribe to at least one
 *   existing stream, ascending; they all share `model.subscriptions[active[0]]`.
 * @returns The target of each active member, aligned with `active`.
 */
export function buildHomogeneousTargets(
  model: GroupModel,
  ownership: PreviousOwnership,
  active: readonly number[],
): Assignment[] {
  const memberCount = active.length;
  const first = active[0];
  if (first === undefined) return [];
  const streams = model.subscriptions[first] ?? [];
  const heldOf = (m: number): Map<number, number[]> =>
    ownership.held[active[m] as number] ?? new Map<number, number[]>();

  // Who held shards of which stream before (local member indices, ascending).
  const holders = new Map<number, number[]>();
  for (let m = 0; m < memberCount; m++) {
    for (const t of heldOf(m).keys()) {
      const list = holders.get(t);
      if (list) list.push(m);
      else holders.set(t, [m]);
    }
  }

  const quota = new Map<number, number>();
  const demands: ExtraDemand[] = [];
  for (const t of streams) {
    const shards = model.streams[t]?.shards.length ?? 0;
    const q = Math.floor(shards / memberCount);
    quota.set(t, q);
    const wanting = (holders.get(t) ?? []).filter((m) => (heldOf(m).get(t)?.length ?? 0) > q);
    demands.push({ stream: t, extras: shards % memberCount, wanting });
  }

  // Receivers of unwanted extras: members that held the fewest shards before, then member order.
  const heldTotal = (m: number): number => ownership.heldTotal[active[m] as number] ?? 0;
  const rank: number[] = Array.from({ length: memberCount }, () => 0);
  Array.from({ length: memberCount }, (_, m) => m)
    .sort((a, b) => heldTotal(a) - heldTotal(b) || a - b)
    .forEach((m, position) => (rank[m] = position));
  const extras = planExtraShards(memberCount, demands, rank);

  const extraHolders = new Map<number, number[]>();
  extras.forEach((set, m) => {
    for (const t of set) {
      const list = extraHolders.get(t);
      if (list) list.push(m);
      else extraHolders.set(t, [m]);
    }
  });

  const targets = Array.from({ length: memberCount }, () => new Map<number, number[]>());
  const everyone = Array.from({ length: memberCount }, (_, m) => m);
  for (const t of streams) {
    const q = quota.get(t) ?? 0;
    // Consumed in place: -1 marks a shard nobody has taken yet.
    const owners = ownership.owners[t] as Int32Array;
    const cap = (m: number): number => q + (extras[m]?.has(t) ? 1 : 0);
    for (const m of holders.get(t) ?? []) {
      const previous = heldOf(m).get(t) ?? [];
      const limit = cap(m);
      for (let k = limit; k < previous.length; k++) owners[previous[k] as number] = -1;
      (targets[m] as Map<number, number[]>).set(t, previous.slice(0, limit));
    }
    let next = 0;
    const recipients = q > 0 ? everyone : (extraHolders.get(t) ?? []);
    for (const m of recipients) {
      const target = targets[m] as Map<number, number[]>;
      let mine = target.get(t);
      if (!mine) target.set(t, (mine = []));
      for (let need = cap(m) - mine.length; need > 0; need--) {
        while (next < owners.length && owners[next] !== -1) next++;
        if (next >= owners.length) throw new Error(`uniform: stream ${t} ran out of shards`);
        owners[next] = m;
        mine.push(next);
      }
    }
  }
  return targets.map((byStream) => toAssignment(model.streams, byStream));
}
