import { rawEntryFields } from './entry-codec.js';
import type { DeadLetterReason } from './shard-reader.types.js';

/** Longest stack trace kept in a dead-letter entry, in characters. */
const MAX_STACK_LENGTH = 2000;

/**
 * What a dead-letter entry records.
 *
 * @publicApi
 */
export interface DeadLetterInput {
  /** The original entry's `field, value, …` list (its key/payload/headers are copied as is). */
  fields: readonly Buffer[];
  stream: string;
  shard: number;
  group: string;
  /** The original entry id on the shard. */
  id: string;
  reason: DeadLetterReason;
  error: Error;
  deliveryCount: number;
  memberId: string;
  failedAt: Date;
}

/**
 * The fields of a dead-letter entry (`XADD <deadLetterKey> * …`):
 * `key`, `payload`, `headers` (the original bytes, each only if the original had it; so a
 * dead-letter entry can be re-published as is), then `stream`, `shard`, `group`, `id` (the
 * original entry id), `reason` (`max-deliveries` | `undecodable` | `non-retryable`), `error` (the message),
 * `stack` (trimmed to 2000 characters, when known), `deliveryCount`, `memberId` and
 * `failedAt` (ISO-8601).
 *
 * @publicApi
 */
export function deadLetterFields(input: DeadLetterInput): Array<string | Buffer> {
  const original = rawEntryFields(input.fields);
  const fields: Array<string | Buffer> = [];
  if (original.key) fields.push('key', original.key);
  if (original.payload) fields.push('payload', original.payload);
  if (original.headers) fields.push('headers', original.headers);
  fields.push(
    'stream',
    input.stream,
    'shard',
    String(input.shard),
    'group',
    input.group,
    'id',
    input.id,
    'reason',
    input.reason,
    'error',
    input.error.message,
  );
  if (input.error.stack) fields.push('stack', input.error.stack.slice(0, MAX_STACK_LENGTH));
  fields.push(
    'deliveryCount',
    String(input.deliveryCount),
    'memberId',
    input.memberId,
    'failedAt',
    input.failedAt.toISOString(),
  );
  return fields;
}

/** Normalizes anything thrown into an `Error`. @publicApi */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : `non-Error thrown: ${safeString(thrown)}`);
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
