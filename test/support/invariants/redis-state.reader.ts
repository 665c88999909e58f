import type { Redis } from 'ioredis';
import type { DeadLetteredEntry, PendingSnapshot } from './invariant-input.types.js';

/** A shard as the routing metadata lists it. */
export interface ShardKey {
  readonly id: number;
  readonly key: string;
}

/**
 * The consumer group's pending entries on every shard (`XPENDING key group - + n`), read at the
 * end of a run. A shard whose group does not exist yet counts as having none.
 */
export async function readPendingSnapshot(
  redis: Redis,
  group: string,
  shards: readonly ShardKey[],
): Promise<PendingSnapshot> {
  const byShard = new Map<number, Array<{ id: string; consumer: string }>>();
  for (const { id, key } of shards) {
    let rows: Array<[string, string, number, number]> = [];
    try {
      rows = (await redis.xpending(key, group, '-', '+', 100_000)) as Array<
        [string, string, number, number]
      >;
    } catch (error) {
      if (!String(error).includes('NOGROUP')) throw error;
    }
    byShard.set(
      id,
      rows.map(([entryId, consumer]) => ({ id: entryId, consumer })),
    );
  }
  return { byShard };
}

/** Every entry of a dead-letter stream, decoded (see the library's `deadLetterFields`). */
export async function readDeadLetters(
  redis: Redis,
  deadLetterKey: string,
): Promise<DeadLetteredEntry[]> {
  const entries = await redis.xrange(deadLetterKey, '-', '+');
  return entries.map(([, fields]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
    return {
      shard: Number(f.shard),
      id: f.id ?? '',
      reason: f.reason ?? '',
      error: f.error ?? '',
      deliveryCount: Number(f.deliveryCount),
      memberId: f.memberId ?? '',
    };
  });
}
