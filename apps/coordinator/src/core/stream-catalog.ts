/**
 * What the core needs to know about streams, as seen by one group. Implemented by the stream
 * registry (which also accounts for resharding: during a change, a group may consume only some
 * of a stream's shards).
 */
export interface StreamCatalog {
  /**
   * The shards of `stream` that `group` may consume now (ascending) and a version string that
   * changes whenever that set changes; `undefined` when the stream does not exist. `resharding`
   * is true while the stream is being resharded (a change of the view is then a reshard step).
   */
  view(
    group: string,
    stream: string,
  ):
    | {
        readonly version: string;
        readonly shards: readonly number[];
        readonly resharding?: boolean;
      }
    | undefined;
  /** True when `shard` is a shard of `stream` the coordinator knows (consumable or not). */
  knows(stream: string, shard: number): boolean;
  /** Redis key of a shard. */
  shardKey(stream: string, shard: number): string;
}
