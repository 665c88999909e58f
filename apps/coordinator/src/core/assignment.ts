import type { StreamShards } from '@redis-stream-coordinator/nestjs/protocol';

/**
 * A set of shards across streams: stream name → ascending, duplicate-free shard ids. Entries are
 * never empty. Values are treated as immutable everywhere; every helper returns a new value.
 */
export type Assignment = ReadonlyMap<string, readonly number[]>;

/** The empty assignment. */
export const EMPTY_ASSIGNMENT: Assignment = new Map();

const ascending = (a: number, b: number): number => a - b;

/** Builds an assignment from possibly unsorted, duplicated, empty entries. */
export function assignmentOf(
  entries: Iterable<readonly [string, Iterable<number>]> | Record<string, Iterable<number>>,
): Assignment {
  const source: Iterable<readonly [string, Iterable<number>]> =
    Symbol.iterator in entries
      ? (entries as Iterable<readonly [string, Iterable<number>]>)
      : Object.entries(entries);
  const out = new Map<string, number[]>();
  for (const [stream, shards] of source) {
    const merged = new Set(out.get(stream) ?? []);
    for (const s of shards) merged.add(s);
    if (merged.size > 0) out.set(stream, [...merged].sort(ascending));
  }
  return sortByStream(out);
}

/** Converts the wire shape (`[{stream, shards}]`) into an assignment. */
export function fromWire(entries: readonly StreamShards[]): Assignment {
  return assignmentOf(entries.map((e) => [e.stream, e.shards] as const));
}

/** Converts an assignment to the wire shape: streams in name order, shards ascending. */
export function toWire(assignment: Assignment): StreamShards[] {
  return [...assignment].map(([stream, shards]) => ({ stream, shards: [...shards] }));
}

/** A plain object form for JSON persistence. */
export function toRecord(assignment: Assignment): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const [stream, shards] of assignment) out[stream] = [...shards];
  return out;
}

/** Inverse of {@link toRecord}. */
export function fromRecord(record: Record<string, number[]> | undefined | null): Assignment {
  return record ? assignmentOf(record) : EMPTY_ASSIGNMENT;
}

function sortByStream(map: Map<string, number[]>): Assignment {
  if (map.size <= 1) return map;
  return new Map([...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function mergeSorted(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const x = a[i];
    const y = b[j];
    if (y === undefined || (x !== undefined && x < y)) {
      out.push(x as number);
      i++;
    } else if (x === undefined || y < x) {
      out.push(y);
      j++;
    } else {
      out.push(x);
      i++;
      j++;
    }
  }
  return out;
}

function intersectSorted(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as number;
    const y = b[j] as number;
    if (x < y) i++;
    else if (y < x) j++;
    else {
      out.push(x);
      i++;
      j++;
    }
  }
  return out;
}

function subtractSorted(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let j = 0;
  for (const x of a) {
    while (j < b.length && (b[j] as number) < x) j++;
    if (b[j] !== x) out.push(x);
  }
  return out;
}

/** `a ∪ b`. */
export function union(a: Assignment, b: Assignment): Assignment {
  if (b.size === 0) return a;
  if (a.size === 0) return b;
  const out = new Map<string, number[]>();
  for (const [stream, shards] of a) out.set(stream, [...shards]);
  for (const [stream, shards] of b) {
    const existing = out.get(stream);
    out.set(stream, existing ? mergeSorted(existing, shards) : [...shards]);
  }
  return sortByStream(out);
}

/** `a ∩ b`. */
export function intersect(a: Assignment, b: Assignment): Assignment {
  const out = new Map<string, number[]>();
  for (const [stream, shards] of a) {
    const other = b.get(stream);
    if (!other) continue;
    const both = intersectSorted(shards, other);
    if (both.length > 0) out.set(stream, both);
  }
  return out;
}

/** `a − b`. */
export function subtract(a: Assignment, b: Assignment): Assignment {
  if (b.size === 0) return a;
  const out = new Map<string, number[]>();
  for (const [stream, shards] of a) {
    const other = b.get(stream);
    const rest = other ? subtractSorted(shards, other) : [...shards];
    if (rest.length > 0) out.set(stream, rest);
  }
  return out;
}

/** Keeps only the shards for which `keep(stream, shard)` is true. */
export function filter(
  a: Assignment,
  keep: (stream: string, shard: number) => boolean,
): Assignment {
  const out = new Map<string, number[]>();
  for (const [stream, shards] of a) {
    const kept = shards.filter((s) => keep(stream, s));
    if (kept.length > 0) out.set(stream, kept);
  }
  return out;
}

/** True when the assignment holds no shard. */
export function isEmpty(a: Assignment): boolean {
  return a.size === 0;
}

/** Number of shards across all streams. */
export function size(a: Assignment): number {
  let n = 0;
  for (const shards of a.values()) n += shards.length;
  return n;
}

/** True when `shard` of `stream` is in `a`. */
export function has(a: Assignment, stream: string, shard: number): boolean {
  const shards = a.get(stream);
  if (!shards) return false;
  let lo = 0;
  let hi = shards.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = shards[mid] as number;
    if (v === shard) return true;
    if (v < shard) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** True when `a` and `b` hold exactly the same shards. */
export function equals(a: Assignment, b: Assignment): boolean {
  if (a.size !== b.size) return false;
  for (const [stream, shards] of a) {
    const other = b.get(stream);
    if (!other || other.length !== shards.length) return false;
    for (let i = 0; i < shards.length; i++) if (shards[i] !== other[i]) return false;
  }
  return true;
}

/** True when every shard of `a` is in `b`. */
export function isSubset(a: Assignment, b: Assignment): boolean {
  return isEmpty(subtract(a, b));
}

/** True when `a` and `b` share at least one shard. */
export function overlaps(a: Assignment, b: Assignment): boolean {
  return !isEmpty(intersect(a, b));
}

/** Every `(stream, shard)` pair of `a`, streams in name order, shards ascending. */
export function* pairs(a: Assignment): Generator<readonly [string, number]> {
  for (const [stream, shards] of a) for (const shard of shards) yield [stream, shard] as const;
}

/** A stable string id of one shard, used as a map key. */
export function shardRef(stream: string, shard: number): string {
  return `${stream}\u0000${shard}`;
}
