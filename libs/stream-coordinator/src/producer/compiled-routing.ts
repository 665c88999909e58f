import { InvalidRoutingError } from '../errors/producer/invalid-routing.error.js';
import { RoutingTable } from '../protocol/routing.js';
import type { StreamRouting } from '../protocol/wire.types.js';

/**
 * A stream's routing metadata compiled for publishing: key → shard → shard key in O(1).
 */
export class CompiledRouting {
  readonly stream: string;
  readonly routingEpoch: number;
  readonly deadLetterKey: string;
  private readonly table: RoutingTable;
  private readonly keys = new Map<number, string>();

  /** @throws InvalidRoutingError when the metadata is inconsistent. */
  constructor(readonly routing: StreamRouting) {
    const stream = typeof routing?.stream === 'string' ? routing.stream : '(unknown)';
    const invalid = (problem: string): never => {
      throw new InvalidRoutingError(stream, problem);
    };
    if (typeof routing !== 'object' || routing === null) invalid('not an object');
    if (!Number.isInteger(routing.routingEpoch)) invalid('routingEpoch is not an integer');
    if (!Array.isArray(routing.shards) || routing.shards.length === 0) invalid('no shards listed');
    for (const shard of routing.shards) {
      if (!Number.isInteger(shard?.id) || typeof shard.key !== 'string' || shard.key === '') {
        invalid(`malformed shard entry ${JSON.stringify(shard)}`);
      }
      this.keys.set(shard.id, shard.key);
    }
    const fn = routing.routing;
    if (fn?.function !== 'murmur3-slots' || fn.hash !== 'murmur3_x86_32') {
      invalid(
        `unsupported routing function ${JSON.stringify(fn?.function)}/${JSON.stringify(fn?.hash)}`,
      );
    }
    if (!Number.isInteger(fn.slots) || fn.slots < 1 || !Array.isArray(fn.ranges)) {
      invalid('malformed slots or ranges');
    }
    for (const range of fn.ranges) {
      if (!this.keys.has(range.shard))
        invalid(`range [${range.from}, ${range.to}) names unlisted shard ${range.shard}`);
    }
    try {
      this.table = new RoutingTable(fn);
    } catch (error) {
      invalid(error instanceof Error ? error.message : String(error));
    }
    this.stream = stream;
    this.routingEpoch = routing.routingEpoch;
    this.deadLetterKey = routing.deadLetterKey;
  }

  /** The shard id `key` routes to. */
  shardFor(key: string): number {
    return this.table.shardFor(key);
  }

  /** The Redis key of shard `shard`. */
  keyOf(shard: number): string {
    return this.keys.get(shard) as string;
  }

  /** The Redis key of the shard `key` routes to. */
  shardKeyFor(key: string): string {
    return this.keys.get(this.table.shardFor(key)) as string;
  }
}
