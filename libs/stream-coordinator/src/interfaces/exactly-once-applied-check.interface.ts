/**
 * Which entry a dead-letter decision is about: the offsets table's key and the entry's id.
 *
 * @internal
 */
export interface AppliedEntryRef {
  readonly group: string;
  readonly stream: string;
  readonly shard: number;
  /** The Redis Stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  /** The member deciding (recorded for diagnostics). */
  readonly memberId?: string;
}

/**
 * Settles the dead-letter decision of an exactly-once handler's entry in the offsets table. The
 * `/postgres` entry point provides it under `EXACTLY_ONCE_APPLIED_CHECK`; the handler explorer
 * attaches it to exactly-once handlers. Resolves `true` when the entry's effects are already
 * committed (its id is at or before the last one recorded for its shard): acknowledge it.
 * Resolves `false` once the table records the entry as dead-lettered, so that no later attempt
 * (a zombie's) can apply it: dead-letter it. Rejects when it cannot tell: the database
 * unreachable or the row's lock not granted in time (nothing is recorded then), and at once when
 * `signal` (the reader's) fires (the decision may have committed then: a later attempt finds the
 * mark and dead-letters the entry).
 *
 * @internal
 */
export interface ExactlyOnceAppliedCheck {
  settle(entry: AppliedEntryRef, signal?: AbortSignal): Promise<boolean>;
}
