import {
  type Assignment,
  EMPTY_ASSIGNMENT,
  intersect,
  size,
} from '../../apps/coordinator/src/core/assignment.js';
import type { AssignorInput } from '../../apps/coordinator/src/core/assignors/shard-assignor.interface.js';

/**
 * Brute force: the most previous shards any assignment of a homogeneous group can keep while being
 * balanced per stream and in total (to within one), for small groups (it enumerates, per stream,
 * every set of members taking the `+1`). Previous targets are read the way the uniform assignor
 * reads them: existing shards of subscribed streams, the smallest member id keeping a shard claimed
 * twice.
 */
export function maxKeptBalanced(input: AssignorInput): number {
  const ids = [...input.members.keys()].sort();
  const m = ids.length;
  if (m === 0) return 0;
  const subs = input.members.get(ids[0] as string)?.subscribedStreams ?? [];
  const streams = [...input.streams].filter(([name, s]) => s.length > 0 && subs.includes(name));
  const claimed = new Set<string>();
  const demands: { extras: number; wanted: number[] }[] = [];
  let base = 0;
  let total = 0;
  for (const [name, shards] of streams) {
    const q = Math.floor(shards.length / m);
    const exists = new Set(shards);
    const held = ids.map((id) => {
      const prev = input.members.get(id)?.previousTarget.get(name) ?? [];
      return prev.filter((s) => {
        const key = `${name}/${s}`;
        if (!exists.has(s) || claimed.has(key)) return false;
        claimed.add(key);
        return true;
      }).length;
    });
    base += held.reduce((sum, h) => sum + Math.min(h, q), 0);
    demands.push({ extras: shards.length % m, wanted: held.map((h) => (h > q ? 1 : 0)) });
    total += shards.length % m;
  }
  const floor = Math.floor(total / m);
  const plusOnes = total % m;
  const count = Array.from({ length: m }, () => 0);
  let best = -1;
  const visit = (d: number, gained: number): void => {
    const demand = demands[d];
    if (!demand) {
      if (count.filter((c) => c === floor + 1).length === plusOnes) best = Math.max(best, gained);
      return;
    }
    for (const takers of subsets(m, demand.extras)) {
      let ok = true;
      let gain = 0;
      for (const t of takers) {
        count[t] = (count[t] ?? 0) + 1;
        gain += demand.wanted[t] ?? 0;
        if ((count[t] ?? 0) > floor + 1) ok = false;
      }
      if (ok) visit(d + 1, gained + gain);
      for (const t of takers) count[t] = (count[t] ?? 0) - 1;
    }
  };
  visit(0, 0);
  return base + best;
}

/** How many previous shards `output` keeps: Σ |target ∩ previous target| over members. */
export function keptShards(input: AssignorInput, output: ReadonlyMap<string, Assignment>): number {
  let kept = 0;
  for (const [id, member] of input.members) {
    kept += size(intersect(output.get(id) ?? EMPTY_ASSIGNMENT, member.previousTarget));
  }
  return kept;
}

function subsets(n: number, k: number): number[][] {
  const out: number[][] = [];
  const pick = (start: number, acc: number[]): void => {
    if (acc.length === k) {
      out.push([...acc]);
      return;
    }
    for (let i = start; i <= n - (k - acc.length); i++) {
      acc.push(i);
      pick(i + 1, acc);
      acc.pop();
    }
  };
  pick(0, []);
  return out;
}

/**
 * A chain of members `u → … → v` along which shards could move to lower `u`'s load by raising a
 * member at least two below it (each hop: the giver holds a shard of a stream the taker subscribes
 * to), described as a string; null when there is none, i.e. when the loads are as balanced as the
 * subscriptions allow.
 */
export function costReducingPath(
  input: AssignorInput,
  output: ReadonlyMap<string, Assignment>,
): string | null {
  const ids = [...input.members.keys()];
  const load = new Map(ids.map((id) => [id, size(output.get(id) ?? EMPTY_ASSIGNMENT)]));
  for (const from of ids) {
    const seen = new Set([from]);
    const queue: string[][] = [[from]];
    while (queue.length > 0) {
      const path = queue.shift() as string[];
      const x = path[path.length - 1] as string;
      for (const stream of (output.get(x) ?? EMPTY_ASSIGNMENT).keys()) {
        for (const y of ids) {
          if (seen.has(y) || !input.members.get(y)?.subscribedStreams.includes(stream)) continue;
          seen.add(y);
          if ((load.get(y) ?? 0) <= (load.get(from) ?? 0) - 2) {
            return `${[...path, y].join(' → ')} (loads ${load.get(from)} → ${load.get(y)})`;
          }
          queue.push([...path, y]);
        }
      }
    }
  }
  return null;
}
