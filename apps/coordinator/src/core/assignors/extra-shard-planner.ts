import { OPTIMIZER_BUDGET, optimizeExtras } from './extra-shard-optimizer.js';
import { MemberQueue } from './member-queue.js';
import { heapKey, RANK_SPACE } from './number-heap.js';

/** One stream as the planner sees it. */
export interface ExtraDemand {
  /** Stream index. */
  readonly stream: number;
  /** `P_t mod M`: how many members take `floor(P_t/M) + 1` shards of the stream. */
  readonly extras: number;
  /**
   * Members that would keep one more of their previous shards if they took an extra of this
   * stream (they held more than `floor(P_t/M)` of it), ascending.
   */
  readonly wanting: readonly number[];
}

/** How many members may be compared when picking which one gives an extra away. */
const DONOR_CANDIDATES = 8;

/**
 * Decides which members take the `+1` of each stream in the homogeneous uniform assignment.
 *
 * Each stream `t` hands out `extras_t` "extra" slots, at most one per member. The result gives every
 * member `floor(R/M)` or `ceil(R/M)` extras in total (`R = Σ extras_t`), which is what makes the
 * totals balanced to within one while every stream stays balanced to within one. Among all such
 * plans it holds the most *wanted* extras (an extra is wanted when it lets the member keep one more
 * of its previous shards), unless a huge group exhausts {@link OPTIMIZER_BUDGET}:
 *
 * 1. greedy: streams with the least slack first (`wanting − extras`); each stream's extras go to
 *    members that want them (fewest extras so far first), the rest to the members with the fewest
 *    extras, preferring members that held the fewest shards before (newcomers);
 * 2. balancing: while the most and the least loaded member differ by two or more, move one extra
 *    from a most loaded member to a least loaded one. The donor always holds an extra of a stream the
 *    receiver lacks (it holds more of them, one per stream), so this ends balanced; the move that
 *    keeps the most wanted extras is chosen;
 * 3. {@link optimizeExtras} turns the (almost always already optimal) plan into an optimal one.
 *
 * Time: O((M + R) log M + moves · R/M) for steps 1–2; step 3 is skipped when a simple bound proves
 * the plan optimal and costs O(M·S) per Bellman-Ford pass otherwise.
 *
 * @param memberCount `M`.
 * @param rank Per member a tie-break rank, `0 <= rank < 2^20`, lower is preferred as a receiver.
 * @returns Per member the set of stream indices it takes an extra of.
 */
export function planExtraShards(
  memberCount: number,
  demands: readonly ExtraDemand[],
  rank: readonly number[],
): Set<number>[] {
  const extras = Array.from({ length: memberCount }, () => new Set<number>());
  const wants = new Map<number, Set<number>>();
  for (const d of demands) wants.set(d.stream, new Set(d.wanting));
  const wanted = (member: number, stream: number): number =>
    wants.get(stream)?.has(member) ? 1 : 0;
  const rankOf = (member: number): number => rank[member] ?? 0;
  const count = (member: number): number => extras[member]?.size ?? 0;

  greedy(memberCount, demands, extras, rankOf);
  balance(memberCount, extras, rankOf, count, wanted);
  const total = demands.reduce((sum, d) => sum + d.extras, 0);
  optimizeExtras(
    {
      memberCount,
      streams: demands.filter((d) => d.extras > 0).map((d) => d.stream),
      floor: Math.floor(total / Math.max(memberCount, 1)),
      wanted,
    },
    extras,
    OPTIMIZER_BUDGET,
  );
  return extras;
}

function greedy(
  memberCount: number,
  demands: readonly ExtraDemand[],
  extras: Set<number>[],
  rankOf: (member: number) => number,
): void {
  const byFewest = new MemberQueue(memberCount);
  const requeue = (m: number): void => byFewest.set(m, heapKey(extras[m]?.size ?? 0, rankOf(m)));
  for (let m = 0; m < memberCount; m++) requeue(m);

  const order = demands
    .filter((d) => d.extras > 0)
    .sort(
      (a, b) => a.wanting.length - a.extras - (b.wanting.length - b.extras) || a.stream - b.stream,
    );
  for (const d of order) {
    let takers = [...d.wanting];
    if (takers.length > d.extras) {
      takers.sort(
        (a, b) => (extras[a]?.size ?? 0) - (extras[b]?.size ?? 0) || rankOf(a) - rankOf(b) || a - b,
      );
      takers = takers.slice(0, d.extras);
    }
    for (const m of takers) {
      extras[m]?.add(d.stream);
      requeue(m);
    }
    const skipped: number[] = [];
    for (let need = d.extras - takers.length; need > 0;) {
      const m = byFewest.pop();
      if (m < 0) throw new Error(`extra-shard planner ran out of members for stream ${d.stream}`);
      const mine = extras[m];
      if (!mine || mine.has(d.stream)) {
        skipped.push(m);
        continue;
      }
      mine.add(d.stream);
      requeue(m);
      need--;
    }
    for (const m of skipped) requeue(m);
  }
}

function balance(
  memberCount: number,
  extras: Set<number>[],
  rankOf: (member: number) => number,
  count: (member: number) => number,
  wanted: (member: number, stream: number) => number,
): void {
  const least = new MemberQueue(memberCount);
  const most = new MemberQueue(memberCount);
  const requeue = (m: number): void => {
    least.set(m, heapKey(count(m), rankOf(m)));
    most.set(m, heapKey(-count(m), RANK_SPACE - 1 - rankOf(m)));
  };
  for (let m = 0; m < memberCount; m++) requeue(m);

  for (;;) {
    const receiver = least.peek();
    const top = most.peek();
    if (receiver < 0 || top < 0 || count(top) - count(receiver) <= 1) return;
    const receiverExtras = extras[receiver] as Set<number>;

    const candidates: number[] = [];
    let best = { donor: -1, stream: -1, gain: -2 };
    while (candidates.length < DONOR_CANDIDATES && best.gain < 1) {
      const donor = most.peek();
      if (donor < 0 || count(donor) !== count(top)) break;
      most.pop();
      candidates.push(donor);
      for (const stream of extras[donor] as Set<number>) {
        if (receiverExtras.has(stream)) continue;
        const gain = wanted(receiver, stream) - wanted(donor, stream);
        if (gain > best.gain) best = { donor, stream, gain };
        if (gain === 1) break;
      }
    }
    if (best.donor < 0) throw new Error('extra-shard planner found no extra to move');
    extras[best.donor]?.delete(best.stream);
    receiverExtras.add(best.stream);
    for (const m of candidates) requeue(m);
    requeue(receiver);
  }
}
