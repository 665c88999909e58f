/** One Redis consumer group on a shard, as `XINFO GROUPS` reports it. */
export interface ConsumerGroupInfo {
  readonly name: string;
  /** Entries delivered and not acknowledged. */
  readonly pending: number;
  readonly lastDeliveredId: string;
  /** Entries not delivered yet; `null` when Redis cannot tell (Redis < 7, SETID, trimmed gaps). */
  readonly lag: number | null;
}

/** A closed shard's stream as inspected by the reshard driver. */
export interface ShardInspection {
  /** Entries left in the stream (0 also when the key does not exist). */
  readonly length: number;
  /** Id of the last entry in the stream, `null` when it is empty. */
  readonly lastEntryId: string | null;
  readonly groups: ReadonlyMap<string, ConsumerGroupInfo>;
}

/**
 * Orders two stream entry ids (`<ms>-<seq>`, or a bare `<ms>`): negative, zero or positive.
 *
 * @throws RangeError for a malformed id.
 */
export function compareStreamIds(a: string, b: string): number {
  const [am, as] = splitId(a);
  const [bm, bs] = splitId(b);
  if (am !== bm) return am < bm ? -1 : 1;
  return as === bs ? 0 : as < bs ? -1 : 1;
}

function splitId(id: string): [bigint, bigint] {
  const match = /^(\d+)(?:-(\d+))?$/.exec(id);
  if (!match) throw new RangeError(`not a stream entry id: ${JSON.stringify(id)}`);
  return [BigInt(match[1] as string), BigInt(match[2] ?? '0')];
}

/**
 * True when `group` has nothing left in a shard that no longer takes writes: nothing pending and
 * everything delivered — `lag == 0`, or (when `lag` is `null`, which proves nothing) its
 * last-delivered id at or after the stream's last entry, or an empty stream. A group without a
 * consumer group on the shard has drained it only when the stream is empty (it never read it).
 */
export function isDrainedFor(shard: ShardInspection, group: string): boolean {
  const info = shard.groups.get(group);
  if (!info) return shard.length === 0;
  if (info.pending > 0) return false;
  if (shard.length === 0 || info.lag === 0) return true;
  return (
    shard.lastEntryId !== null && compareStreamIds(info.lastDeliveredId, shard.lastEntryId) >= 0
  );
}
