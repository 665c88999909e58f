import { InvalidStreamEntryIdError } from '../errors/postgres/invalid-stream-entry-id.error.js';

/** A Redis Stream entry id as its two unsigned 64-bit parts. */
export interface StreamEntryId {
  readonly ms: bigint;
  readonly seq: bigint;
}

const MAX_U64 = (1n << 64n) - 1n;
const ENTRY_ID = /^(\d{1,20})-(\d{1,20})$/;

/** The id below every entry id Redis hands out (`0-0` is never a valid entry id). */
export const BEFORE_ANY_ENTRY: StreamEntryId = { ms: 0n, seq: 0n };

/**
 * Parses `<ms>-<seq>`.
 *
 * @throws InvalidStreamEntryIdError for anything else, or a part above 2^64 - 1.
 */
export function parseStreamEntryId(id: string): StreamEntryId {
  const match = ENTRY_ID.exec(id);
  if (match === null) throw new InvalidStreamEntryIdError(id);
  const ms = BigInt(match[1]!);
  const seq = BigInt(match[2]!);
  if (ms > MAX_U64 || seq > MAX_U64) throw new InvalidStreamEntryIdError(id);
  return { ms, seq };
}

/**
 * Orders entry ids as Redis does: by `ms`, then by `seq`, each as a number (`9-0` < `10-0`, which
 * a string comparison gets wrong). Negative when `a` is before `b`, 0 when equal.
 */
export function compareStreamEntryIds(a: StreamEntryId, b: StreamEntryId): number {
  if (a.ms !== b.ms) return a.ms < b.ms ? -1 : 1;
  if (a.seq !== b.seq) return a.seq < b.seq ? -1 : 1;
  return 0;
}

/** `<ms>-<seq>` of an id. */
export function formatStreamEntryId(id: StreamEntryId): string {
  return `${id.ms}-${id.seq}`;
}

/**
 * Whether the entry `id` was already applied when `lastApplied` is the last one recorded for its
 * shard: entries of a shard are applied in id order, so every id up to the last one was.
 */
export function alreadyApplied(id: StreamEntryId, lastApplied: StreamEntryId): boolean {
  return compareStreamEntryIds(id, lastApplied) <= 0;
}
