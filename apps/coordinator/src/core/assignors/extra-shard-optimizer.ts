/**
 * Most edge relaxations the exact search may spend per assignment. Far above what groups of a few
 * hundred members need; it bounds the worst case of very large groups, where the greedy result then
 * stands.
 */
export const OPTIMIZER_BUDGET = 2_000_000;

/** What the optimizer needs to know about the extras problem. */
export interface ExtrasProblem {
  readonly memberCount: number;
  /** Stream indices that hand out at least one extra. */
  readonly streams: readonly number[];
  /** `floor(R/M)`: every member ends with this many extras or one more. */
  readonly floor: number;
  /** 1 when `member` wants an extra of `stream` (keeps one more previous shard with it), else 0. */
  wanted(member: number, stream: number): number;
}

/**
 * Makes a balanced extras plan optimal: the number of wanted extras held becomes the maximum any
 * plan with the same per-stream counts and per-member balance can reach.
 *
 * The plan is a flow (stream → member → sink, with a shared "+1" slot pool); a plan is optimal iff
 * its residual graph has no negative cycle. Residual edges: member → stream for an extra it holds
 * (cost +wanted), stream → member for one it lacks (cost −wanted), member at `floor` → pool and
 * pool → member at `floor + 1` (cost 0). Bellman-Ford from all nodes at once finds a negative cycle
 * as a cycle of the predecessor graph; cancelling it moves extras along the cycle and gains at least
 * one wanted extra. Skipped when the plan already meets a simple upper bound.
 *
 * Mutates `extras`. Returns false when the budget ran out before optimality was proven.
 */
export function optimizeExtras(
  problem: ExtrasProblem,
  extras: Set<number>[],
  budget = OPTIMIZER_BUDGET,
): boolean {
  const { memberCount: m, streams, floor } = problem;
  const s = streams.length;
  if (m < 2 || s === 0 || meetsUpperBound(problem, extras)) return true;

  // Dense copies: hold/want per (member, stream position), extras count per member.
  const want = new Uint8Array(m * s);
  const hold = new Uint8Array(m * s);
  const count = new Int32Array(m);
  for (let member = 0; member < m; member++) {
    const mine = extras[member] as Set<number>;
    count[member] = mine.size;
    for (let j = 0; j < s; j++) {
      want[member * s + j] = problem.wanted(member, streams[j] as number);
      hold[member * s + j] = mine.has(streams[j] as number) ? 1 : 0;
    }
  }

  // Nodes: members 0..m-1, streams m..m+s-1, the "+1" pool m+s.
  const pool = m + s;
  const nodes = pool + 1;
  const dist = new Int32Array(nodes);
  const parent = new Int32Array(nodes).fill(-1);
  const mark = new Int32Array(nodes);
  let spent = 0;
  let optimal = false;
  while (!optimal) {
    let changed = false;
    for (let member = 0; member < m; member++) {
      const base = member * s;
      for (let j = 0; j < s; j++) {
        const stream = m + j;
        const w = want[base + j] as number;
        if (hold[base + j] === 1) {
          const d = (dist[member] as number) + w;
          if (d < (dist[stream] as number)) {
            dist[stream] = d;
            parent[stream] = member;
            changed = true;
          }
        } else {
          const d = (dist[stream] as number) - w;
          if (d < (dist[member] as number)) {
            dist[member] = d;
            parent[member] = stream;
            changed = true;
          }
        }
      }
      const atFloor = count[member] === floor;
      const from = atFloor ? member : pool;
      const to = atFloor ? pool : member;
      if ((dist[from] as number) < (dist[to] as number)) {
        dist[to] = dist[from] as number;
        parent[to] = from;
        changed = true;
      }
    }
    spent += m * (s + 1);
    if (!changed) optimal = true;
    else if (spent > budget) break;
    else {
      for (const cycle of predecessorCycles(parent, mark)) {
        cancel(cycle, m, s, hold, count);
        for (const v of cycle) parent[v] = -1;
      }
    }
  }

  for (let member = 0; member < m; member++) {
    const mine = extras[member] as Set<number>;
    for (let j = 0; j < s; j++) {
      const stream = streams[j] as number;
      if (hold[member * s + j] === 1) mine.add(stream);
      else mine.delete(stream);
    }
  }
  return optimal;
}

/** True when the plan holds as many wanted extras as a per-stream / per-member bound allows. */
function meetsUpperBound(problem: ExtrasProblem, extras: readonly Set<number>[]): boolean {
  const { memberCount, streams, floor } = problem;
  let held = 0;
  const wantsPerStream = new Map<number, number>();
  const extrasPerStream = new Map<number, number>();
  let rowBound = 0;
  let plusOneSlots = 0;
  let wideMembers = 0;
  for (let member = 0; member < memberCount; member++) {
    const mine = extras[member] as Set<number>;
    if (mine.size > floor) plusOneSlots++;
    let wants = 0;
    for (const stream of streams) {
      const w = problem.wanted(member, stream);
      wants += w;
      if (w) wantsPerStream.set(stream, (wantsPerStream.get(stream) ?? 0) + 1);
      if (mine.has(stream)) {
        held += w;
        extrasPerStream.set(stream, (extrasPerStream.get(stream) ?? 0) + 1);
      }
    }
    rowBound += Math.min(wants, floor);
    if (wants > floor) wideMembers++;
  }
  rowBound += Math.min(plusOneSlots, wideMembers);
  let columnBound = 0;
  for (const stream of streams) {
    columnBound += Math.min(wantsPerStream.get(stream) ?? 0, extrasPerStream.get(stream) ?? 0);
  }
  return held >= Math.min(rowBound, columnBound);
}

/**
 * The cycles of the predecessor graph (each node has at most one predecessor, so they are node
 * disjoint), each listed against edge direction: `cycle[i]`'s predecessor is `cycle[i + 1]`.
 * Every such cycle has negative cost (Bellman-Ford's predecessor-graph lemma).
 */
function predecessorCycles(parent: Int32Array, mark: Int32Array): number[][] {
  mark.fill(0);
  const cycles: number[][] = [];
  for (let start = 0; start < parent.length; start++) {
    if (mark[start] !== 0) continue;
    const tag = start + 1;
    let v = start;
    while (v >= 0 && mark[v] === 0) {
      mark[v] = tag;
      v = parent[v] as number;
    }
    if (v >= 0 && mark[v] === tag) {
      const cycle = [v];
      for (let u = parent[v] as number; u !== v; u = parent[u] as number) cycle.push(u);
      cycles.push(cycle);
    }
  }
  return cycles;
}

/**
 * Applies a negative cycle: an edge member → stream gives that extra up, stream → member takes it,
 * edges through the pool move a "+1" slot (the counts follow).
 */
function cancel(
  cycle: readonly number[],
  memberCount: number,
  streamCount: number,
  hold: Uint8Array,
  count: Int32Array,
): void {
  const pool = memberCount + streamCount;
  for (let i = 0; i < cycle.length; i++) {
    const v = cycle[i] as number;
    const u = cycle[(i + 1) % cycle.length] as number;
    if (u === pool || v === pool) continue;
    if (u < memberCount) {
      hold[u * streamCount + (v - memberCount)] = 0;
      count[u] = (count[u] as number) - 1;
    } else {
      hold[v * streamCount + (u - memberCount)] = 1;
      count[v] = (count[v] as number) + 1;
    }
  }
}
