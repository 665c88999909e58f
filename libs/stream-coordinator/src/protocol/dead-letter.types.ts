/**
 * Why an entry was dead-lettered (the `reason` field of a dead-letter entry).
 *
 * @publicApi
 */
export const DEAD_LETTER_REASONS = ['max-deliveries', 'undecodable', 'non-retryable'] as const;

/**
 * A dead-letter reason.
 *
 * @publicApi
 */
export type DeadLetterReasonName = (typeof DEAD_LETTER_REASONS)[number];

/**
 * The header a replayed message carries: the id of the dead-letter entry it came from
 * (docs/protocol.md §16).
 *
 * @publicApi
 */
export const REPLAY_OF_HEADER = 'rsc-replay-of';

/**
 * Which dead-letter entries an operation takes; every field narrows the selection (docs/protocol.md §16).
 *
 * @publicApi
 */
export interface DeadLetterFilter {
  /** Only entries of this consumer group. */
  group?: string;
  /** Only entries dead-lettered for this reason. */
  reason?: DeadLetterReasonName;
  /** Only entries whose error message or error class name contains this text (case-insensitive). */
  error?: string;
  /** Only entries dead-lettered at or after this time (ms since the epoch). */
  fromMs?: number;
  /** Only entries dead-lettered at or before this time (ms since the epoch). */
  toMs?: number;
  /** `true`: only replayed entries; `false`: only entries never replayed. */
  replayed?: boolean;
}

/**
 * The replay mark of a dead-letter entry: `pending` while a replay is publishing it (or after a
 * replay crashed between claiming and marking), `done` once it was re-published.
 *
 * @publicApi
 */
export interface DeadLetterReplayMark {
  state: 'pending' | 'done';
  /** When the mark was written (ISO-8601, Redis clock). */
  at: string;
  /** `done`: the id of the re-published entry. */
  entryId?: string;
  /** `done`: the shard it was written to. */
  shardKey?: string;
}

/**
 * One dead-letter entry as the API shows it (docs/protocol.md §16).
 *
 * @publicApi
 */
export interface DeadLetterEntry {
  /** The dead-letter entry's own id (in the dead-letter stream). */
  id: string;
  stream: string;
  shard: number | null;
  group: string | null;
  /** The id the message had on its shard. */
  originalId: string | null;
  reason: string | null;
  /** The error message. */
  error: string | null;
  /** The error's class name, when recorded. */
  errorName: string | null;
  /** The error's own enumerable properties (JSON object), when recorded. */
  errorProperties: Record<string, unknown> | null;
  stack: string | null;
  deliveryCount: number | null;
  memberId: string | null;
  failedAt: string | null;
  /** The routing key, or `null` when the message had none (it cannot be replayed). */
  key: string | null;
  /** The payload as UTF-8 text, or `null` when it is not valid UTF-8 (see `payloadBase64`). */
  payload: string | null;
  /** The payload bytes in base64 (always, when the message had a payload). */
  payloadBase64: string | null;
  /** The decoded headers, or `null` when the message had none. */
  headers: Record<string, string> | null;
  replay: DeadLetterReplayMark | null;
}

/**
 * Body of `GET /v1/streams/{stream}/dead-letters` (docs/protocol.md §16).
 *
 * @publicApi
 */
export interface DeadLetterListResponse {
  stream: string;
  deadLetterKey: string;
  entries: DeadLetterEntry[];
  /** Pass as `after` to continue, or `null` when the end of the dead-letter stream was reached. */
  nextCursor: string | null;
  /** How many entries were read to find these (the filters run over them). */
  scanned: number;
}

/**
 * What a replay did with one dead-letter entry.
 *
 * - `replayed`: re-published now (`entryId`, `shardKey`);
 * - `already-replayed`: marked as replayed before, not published again;
 * - `in-progress`: another replay claimed it moments ago, not published;
 * - `not-found`: no dead-letter entry with that id;
 * - `not-replayable`: the entry has no key or no payload;
 * - `failed`: the publish failed (`message`); the claim was released, a later replay retries it.
 *
 * @publicApi
 */
export interface DeadLetterReplayResult {
  id: string;
  outcome:
    'replayed' | 'already-replayed' | 'in-progress' | 'not-found' | 'not-replayable' | 'failed';
  entryId?: string;
  shardKey?: string;
  message?: string;
}

/**
 * Body of `POST /v1/streams/{stream}/dead-letters/replay` (docs/protocol.md §16).
 *
 * @publicApi
 */
export interface DeadLetterReplayResponse {
  stream: string;
  results: DeadLetterReplayResult[];
  replayed: number;
}

/**
 * Body of `POST /v1/streams/{stream}/dead-letters/purge` (docs/protocol.md §16).
 *
 * @publicApi
 */
export interface DeadLetterPurgeResponse {
  stream: string;
  /** How many dead-letter entries were deleted. */
  deleted: number;
}
