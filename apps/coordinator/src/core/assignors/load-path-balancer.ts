/**
 * Most BFS steps the path balancer may spend per assignment; beyond it the loads stay as the
 * balancing rounds left them (each stream's subscribers within one of each other).
 */
export const PATH_BALANCER_BUDGET = 2_000_000;

/** What the path balancer works on (local member indices). */
export interface LoadState {
  /** Per member: stream → shard positions it holds, most recently received last. */
  readonly owned: Map<number, number[]>[];
  readonly load: number[];
  /** Per stream: subscribing members, ascending. */
  readonly subscribers: ReadonlyMap<number, readonly number[]>;
}

/**
 * Removes every *cost-reducing path*: a chain of members `u = x0, x1, …, xk = v` where each `x_i`
 * holds a shard of a stream `x_{i+1}` subscribes to and `load(v) <= load(u) − 2`. Moving one shard
 * along each hop lowers `u` by one, raises `v` by one and leaves the members in between unchanged.
 *
 * With no such path left, the loads are optimal for the subscriptions: the largest load is as small
 * and the smallest as large as any assignment allows, and Σ load² is minimal (Harvey, Ladner,
 * Lovász, Tamir: "Semi-matchings for bipartite graphs and load balancing", 2006). Paths are searched
 * breadth-first from the most loaded members, so each move chain is as short as possible; each hop
 * moves the giver's most recently received shard of the stream, so previous shards stay when they
 * can.
 *
 * Mutates `state`. Returns false when the budget ran out first.
 */
export function removeCostReducingPaths(state: LoadState, budget = PATH_BALANCER_BUDGET): boolean {
  const memberCount = state.load.length;
  const seenMember = new Int32Array(memberCount);
  const viaMember = new Int32Array(memberCount);
  const viaStream = new Int32Array(memberCount);
  const seenStream = new Map<number, number>();
  let stamp = 0;
  let spent = 0;
  const load = (m: number): number => state.load[m] ?? 0;

  for (;;) {
    const levels = [...new Set(state.load)].sort((a, b) => b - a);
    const lowest = levels[levels.length - 1] ?? 0;
    let moved = false;
    for (const level of levels) {
      if (level - lowest < 2) break;
      stamp++;
      const queue: number[] = [];
      for (let m = 0; m < memberCount; m++) {
        if (load(m) === level) {
          seenMember[m] = stamp;
          viaMember[m] = -1;
          queue.push(m);
        }
      }
      let target = -1;
      for (let head = 0; head < queue.length && target < 0; head++) {
        const x = queue[head] as number;
        for (const [t, shards] of state.owned[x] as Map<number, number[]>) {
          spent++;
          if (shards.length === 0 || seenStream.get(t) === stamp) continue;
          seenStream.set(t, stamp);
          for (const y of state.subscribers.get(t) ?? []) {
            spent++;
            if (seenMember[y] === stamp) continue;
            seenMember[y] = stamp;
            viaMember[y] = x;
            viaStream[y] = t;
            if (load(y) <= level - 2) {
              target = y;
              break;
            }
            queue.push(y);
          }
          if (target >= 0) break;
        }
      }
      if (target >= 0) {
        shiftAlong(state, target, viaMember, viaStream);
        moved = true;
        break;
      }
      if (spent > budget) return false;
    }
    if (!moved) return true;
    if (spent > budget) return false;
  }
}

/** Moves one shard along each hop of the BFS path ending at `target`. */
function shiftAlong(
  state: LoadState,
  target: number,
  viaMember: Int32Array,
  viaStream: Int32Array,
): void {
  state.load[target] = (state.load[target] ?? 0) + 1;
  for (let y = target; (viaMember[y] as number) >= 0; y = viaMember[y] as number) {
    const x = viaMember[y] as number;
    const t = viaStream[y] as number;
    const shard = state.owned[x]?.get(t)?.pop() as number;
    const owned = state.owned[y] as Map<number, number[]>;
    const list = owned.get(t);
    if (list) list.push(shard);
    else owned.set(t, [shard]);
    if ((viaMember[x] as number) < 0) state.load[x] = (state.load[x] ?? 0) - 1;
  }
}
