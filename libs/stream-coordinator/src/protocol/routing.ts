import { murmur3x86_32 } from './murmur3.js';
import type { RoutingFunction } from './wire.types.js';

/**
 * Size of the fixed slot space keys hash onto. A stream can never have more shards than slots.
 *
 * @publicApi
 */
export const ROUTING_SLOTS = 4096;

/** Seed of the routing hash. @publicApi */
export const ROUTING_SEED = 0;

/**
 * The slot of a key: `murmur3_x86_32(utf8(key), seed) mod slots`.
 *
 * @publicApi
 */
export function slotOf(key: string, slots = ROUTING_SLOTS, seed = ROUTING_SEED): number {
  return murmur3x86_32(key, seed) % slots;
}

/**
 * Lays `shardIds` (in that order) over the slot space in contiguous, near-equal ranges: the
 * shard at index `i` of `n` owns slots `[floor(i*S/n), floor((i+1)*S/n))`.
 *
 * @publicApi
 */
export function evenSlotRanges(
  shardIds: readonly number[],
  slots = ROUTING_SLOTS,
): RoutingFunction['ranges'] {
  const n = shardIds.length;
  if (n === 0) throw new RangeError('a routing layout needs at least one shard');
  if (n > slots) throw new RangeError(`at most ${slots} shards fit the slot space, got ${n}`);
  return shardIds.map((shard, i) => ({
    from: Math.floor((i * slots) / n),
    to: Math.floor(((i + 1) * slots) / n),
    shard,
  }));
}

/**
 * Builds the routing function body for a layout of `shardIds`.
 *
 * @publicApi
 */
export function routingFunctionFor(shardIds: readonly number[]): RoutingFunction {
  return {
    function: 'murmur3-slots',
    hash: 'murmur3_x86_32',
    seed: ROUTING_SEED,
    slots: ROUTING_SLOTS,
    ranges: evenSlotRanges(shardIds, ROUTING_SLOTS),
  };
}

/**
 * A compiled routing table: key → shard id in O(1) after hashing.
 *
 * @publicApi
 */
export class RoutingTable {
  private readonly slotToShard: Int32Array;

  constructor(private readonly fn: RoutingFunction) {
    this.slotToShard = new Int32Array(fn.slots).fill(-1);
    for (const { from, to, shard } of fn.ranges) this.slotToShard.fill(shard, from, to);
    if (this.slotToShard.includes(-1)) {
      throw new RangeError('routing ranges do not cover every slot');
    }
  }

  /** The shard id that `key` routes to. */
  shardFor(key: string): number {
    return this.slotToShard[murmur3x86_32(key, this.fn.seed) % this.fn.slots] as number;
  }
}

/**
 * For every shard of the `next` layout, the shards of the `previous` layout whose slot ranges
 * overlap it: the only shards that can hold earlier messages of the keys it receives.
 *
 * @publicApi
 */
export function parentShards(
  previous: RoutingFunction['ranges'],
  next: RoutingFunction['ranges'],
): Map<number, number[]> {
  const parents = new Map<number, number[]>();
  for (const child of next) {
    const feeding = previous
      .filter((p) => p.from < child.to && child.from < p.to)
      .map((p) => p.shard);
    parents.set(
      child.shard,
      [...new Set(feeding)].sort((a, b) => a - b),
    );
  }
  return parents;
}
