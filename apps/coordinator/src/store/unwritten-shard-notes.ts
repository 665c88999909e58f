import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

/** What a stream creation or restore opens before its record is written. */
export interface UnwrittenNote {
  /** The attempt's opener id (recorded in the meta hash of each shard it opens fresh). */
  readonly opener: string;
  readonly stream: string;
  readonly ids: readonly number[];
  /** When its replica last vouched for it (the coordinator's clock, Redis time, ms). */
  readonly at: number;
}

/**
 * The notes of what creations and restores open before their record is written
 * (`<p>:{@m}:unwritten-shards`, a hash by opener id, docs/protocol.md §13.6).
 */
export class UnwrittenShardNotes {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
  ) {}

  async write(notes: readonly UnwrittenNote[]): Promise<void> {
    if (notes.length === 0) return;
    const fields: string[] = [];
    for (const { opener, stream, ids, at } of notes)
      fields.push(opener, JSON.stringify({ stream, ids, at }));
    await this.redis.hset(this.keys.unwrittenShardsKey(), ...fields);
  }

  async remove(openers: readonly string[]): Promise<void> {
    if (openers.length > 0) await this.redis.hdel(this.keys.unwrittenShardsKey(), ...openers);
  }

  /** Every note, and the fields that hold no readable note. */
  async read(): Promise<{ notes: UnwrittenNote[]; unreadable: string[] }> {
    const fields = await this.redis.hgetall(this.keys.unwrittenShardsKey());
    const notes: UnwrittenNote[] = [];
    const unreadable: string[] = [];
    for (const [opener, json] of Object.entries(fields)) {
      const note = parseNote(opener, json);
      if (note) notes.push(note);
      else unreadable.push(opener);
    }
    return { notes, unreadable };
  }
}

function parseNote(opener: string, json: string): UnwrittenNote | null {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { stream, ids, at } = value as Record<string, unknown>;
  if (typeof stream !== 'string' || typeof at !== 'number' || !Array.isArray(ids)) return null;
  if (!ids.every((id) => Number.isSafeInteger(id) && (id as number) >= 0)) return null;
  return { opener, stream, ids: ids as number[], at };
}
