import type { StreamShards } from '@redis-stream-coordinator/nestjs/protocol';

/** One shard as a string, `stream/shard`, so sets of shards are plain `Set<string>`s. */
export type ShardRef = string;

/** The {@link ShardRef} of a shard. */
export function shardRef(stream: string, shard: number): ShardRef {
  return `${stream}/${shard}`;
}

/** Splits a {@link ShardRef}. */
export function parseShardRef(ref: ShardRef): { stream: string; shard: number } {
  const slash = ref.lastIndexOf('/');
  return { stream: ref.slice(0, slash), shard: Number(ref.slice(slash + 1)) };
}

/** Wire entries (`[{stream, shards}]`) → a set of refs. */
export function fromWire(entries: readonly StreamShards[] | undefined): Set<ShardRef> {
  const out = new Set<ShardRef>();
  for (const e of entries ?? []) for (const s of e.shards) out.add(shardRef(e.stream, s));
  return out;
}

/** A set of refs → wire entries, streams by name, shards ascending. */
export function toWire(refs: Iterable<ShardRef>): StreamShards[] {
  const byStream = new Map<string, number[]>();
  for (const ref of refs) {
    const { stream, shard } = parseShardRef(ref);
    const list = byStream.get(stream) ?? [];
    list.push(shard);
    byStream.set(stream, list);
  }
  return [...byStream.keys()]
    .sort()
    .map((stream) => ({ stream, shards: (byStream.get(stream) ?? []).sort((a, b) => a - b) }));
}

/** A canonical string of a set, for cheap equality. */
export function setKey(refs: Iterable<ShardRef>): string {
  return [...refs].sort().join(',');
}

/** Every shard of `streams` (`{orders: 8}` → `orders/0` … `orders/7`). */
export function allShards(streams: Readonly<Record<string, number>>): ShardRef[] {
  return Object.entries(streams).flatMap(([stream, n]) =>
    Array.from({ length: n }, (_, i) => shardRef(stream, i)),
  );
}
