import type { Assignment } from '../assignment.js';
import { type GroupModel, toAssignment } from './group-model.js';
import { PATH_BALANCER_BUDGET, removeCostReducingPaths } from './load-path-balancer.js';
import { MemberQueue } from './member-queue.js';
import { heapKey, RANK_SPACE } from './number-heap.js';
import type { PreviousOwnership } from './previous-ownership.js';

/** Most rounds of balancing passes over the streams (Kafka's `MAX_ITERATION_COUNT`). */
export const MAX_BALANCING_ROUNDS = 16;

/** Mutable state of one heterogeneous computation (local member indices `0..M-1`). */
interface State {
  /** Shards each member holds per stream, as a stack: previous shards ascending, then new ones. */
  readonly owned: Map<number, number[]>[];
  readonly load: number[];
  /** Per stream: subscribing members, ascending. */
  readonly subscribers: Map<number, number[]>;
}

/**
 * The uniform assignment when subscriptions differ, after Kafka's
 * `UniformHeterogeneousAssignmentBuilder` plus a final exact balancing step:
 *
 * 1. every member keeps the previous shards of streams it still subscribes to;
 * 2. streams are ordered by shards per subscriber (descending), then subscriber count (ascending),
 *    then name; each unowned shard goes to the least loaded subscriber of its stream (ties: the one
 *    that was less loaded when the stream started, then member id);
 * 3. balancing rounds: stream by stream in that order, shards move from the most to the least loaded
 *    subscriber while their loads differ by two or more — the most recently received shard first,
 *    so previous shards stay put when possible; rounds repeat until a full round moves nothing, at
 *    most {@link MAX_BALANCING_ROUNDS} (Kafka stops here);
 * 4. {@link removeCostReducingPaths} moves shards along chains of members that share streams until
 *    no chain can lower a load by moving shards to a member two or more below it (Kafka's builder
 *    can end at 9/10/11 where 10/10/10 is possible; this step fixes that).
 *
 * Result: loads as balanced as the subscriptions allow — the largest load is minimal, the smallest
 * maximal, Σ load² minimal — and within one of each other when every stream's subscribers share
 * the same subscription. (Bounded by {@link PATH_BALANCER_BUDGET} for huge groups.)
 *
 * @param active Indices (into `model.members`) of the members that subscribe to at least one
 *   existing stream, ascending.
 * @returns The target of each active member, aligned with `active`.
 */
export function buildHeterogeneousTargets(
  model: GroupModel,
  ownership: PreviousOwnership,
  active: readonly number[],
): Assignment[] {
  const state: State = { owned: [], load: [], subscribers: new Map() };
  active.forEach((g, m) => {
    const held = ownership.held[g] ?? new Map<number, number[]>();
    state.owned.push(new Map([...held].map(([t, shards]) => [t, [...shards]])));
    state.load.push(ownership.heldTotal[g] ?? 0);
    for (const t of model.subscriptions[g] ?? []) {
      const list = state.subscribers.get(t);
      if (list) list.push(m);
      else state.subscribers.set(t, [m]);
    }
  });

  const shardCount = (t: number): number => model.streams[t]?.shards.length ?? 0;
  const subscriberCount = (t: number): number => state.subscribers.get(t)?.length ?? 0;
  const order = [...state.subscribers.keys()].sort(
    (a, b) =>
      shardCount(b) * subscriberCount(a) - shardCount(a) * subscriberCount(b) ||
      subscriberCount(a) - subscriberCount(b) ||
      a - b,
  );

  for (const t of order) {
    const owners = ownership.owners[t] as Int32Array;
    const unowned: number[] = [];
    for (let p = 0; p < owners.length; p++) if (owners[p] === -1) unowned.push(p);
    if (unowned.length > 0) assignUnowned(state, t, unowned);
  }

  const balanceable = order.filter((t) => subscriberCount(t) >= 2);
  let lastMoved = -1;
  rounds: for (let round = 0; round < MAX_BALANCING_ROUNDS; round++) {
    for (let i = 0; i < balanceable.length; i++) {
      if (i === lastMoved) break rounds;
      const moved = balanceStream(state, balanceable[i] as number);
      if (moved > 0 || lastMoved === -1) lastMoved = i;
    }
  }
  removeCostReducingPaths(state, PATH_BALANCER_BUDGET);
  return state.owned.map((byStream) => toAssignment(model.streams, byStream));
}

/** The subscribers of `t` ordered by (load, member index): position = tie-break rank. */
function sortedSubscribers(state: State, t: number): number[] {
  const subs = [...(state.subscribers.get(t) ?? [])];
  return subs.sort((a, b) => (state.load[a] ?? 0) - (state.load[b] ?? 0) || a - b);
}

function give(state: State, m: number, t: number, shard: number): void {
  const owned = state.owned[m] as Map<number, number[]>;
  const list = owned.get(t);
  if (list) list.push(shard);
  else owned.set(t, [shard]);
  state.load[m] = (state.load[m] ?? 0) + 1;
}

function assignUnowned(state: State, t: number, unowned: readonly number[]): void {
  const subs = sortedSubscribers(state, t);
  const least = new MemberQueue(subs.length);
  const load = (r: number): number => state.load[subs[r] as number] ?? 0;
  for (let r = 0; r < subs.length; r++) least.set(r, heapKey(load(r), r));
  for (const shard of unowned) {
    const r = least.pop();
    give(state, subs[r] as number, t, shard);
    least.set(r, heapKey(load(r), r));
  }
}

/** One balancing pass over stream `t`; returns the number of shards moved. */
function balanceStream(state: State, t: number): number {
  const subs = sortedSubscribers(state, t);
  const load = (r: number): number => state.load[subs[r] as number] ?? 0;
  const stack = (r: number): number[] | undefined => state.owned[subs[r] as number]?.get(t);
  if (load(subs.length - 1) - load(0) <= 1) return 0;

  const least = new MemberQueue(subs.length);
  const most = new MemberQueue(subs.length);
  const requeue = (r: number): void => {
    least.set(r, heapKey(load(r), r));
    if ((stack(r)?.length ?? 0) > 0) most.set(r, heapKey(-load(r), RANK_SPACE - 1 - r));
    else most.delete(r);
  };
  for (let r = 0; r < subs.length; r++) requeue(r);

  let moved = 0;
  for (;;) {
    const to = least.peek();
    const from = most.peek();
    if (to < 0 || from < 0 || load(from) - load(to) <= 1) return moved;
    const shard = stack(from)?.pop() as number;
    state.load[subs[from] as number] = load(from) - 1;
    give(state, subs[to] as number, t, shard);
    requeue(from);
    requeue(to);
    moved++;
  }
}
