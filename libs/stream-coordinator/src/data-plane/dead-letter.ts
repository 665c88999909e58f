import { rawEntryFields } from './entry-codec.js';
import type { DeadLetterReason } from './shard-reader.types.js';

/** Longest stack trace kept in a dead-letter entry, in characters. */
const MAX_STACK_LENGTH = 2000;

/** Longest `errorProperties` JSON kept in a dead-letter entry, in characters. */
export const MAX_ERROR_PROPERTIES_LENGTH = 4096;

/** Longest `errorName` kept, in characters. */
const MAX_ERROR_NAME_LENGTH = 200;

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
 * `errorName` (the error's class name), `errorProperties` (its own enumerable properties as a
 * JSON object, at most 4096 characters, when it has any), `stack` (trimmed to 2000 characters,
 * when known), `deliveryCount`, `memberId` and `failedAt` (ISO-8601).
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
    'errorName',
    errorName(input.error),
  );
  const properties = errorProperties(input.error);
  if (properties !== undefined) fields.push('errorProperties', properties);
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

/** The error's class name (its constructor's, else its `name`), bounded. */
function errorName(error: Error): string {
  const ctor = (error as { constructor?: { name?: unknown } }).constructor;
  const name = typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : error.name;
  return String(name).slice(0, MAX_ERROR_NAME_LENGTH);
}

/**
 * The error's own enumerable properties (not `message`, `stack`, `cause`, nor a `name` equal to
 * the class name) as a JSON object of
 * at most {@link MAX_ERROR_PROPERTIES_LENGTH} characters: properties are kept in order while they
 * fit, the rest are counted in `"…omitted"`. `undefined` when there are none.
 */
export function errorProperties(error: Error): string | undefined {
  let names: string[];
  try {
    const className = errorName(error);
    // `name` only when it says more than the class name (`this.name = 'X'` is common).
    names = Object.keys(error).filter(
      (n) =>
        n !== 'message' &&
        n !== 'stack' &&
        n !== 'cause' &&
        (n !== 'name' || error.name !== className),
    );
  } catch {
    return undefined;
  }
  if (names.length === 0) return undefined;
  const kept: string[] = [];
  let omitted = 0;
  // Room for the braces and the omitted counter.
  const budget = MAX_ERROR_PROPERTIES_LENGTH - 32;
  let length = 0;
  for (const name of names) {
    let part: string;
    try {
      part = `${JSON.stringify(name)}:${jsonValue((error as unknown as Record<string, unknown>)[name])}`;
    } catch {
      omitted++;
      continue;
    }
    if (length + part.length + 1 > budget) {
      omitted++;
      continue;
    }
    kept.push(part);
    length += part.length + 1;
  }
  if (omitted > 0) kept.push(`"…omitted":${omitted}`);
  return `{${kept.join(',')}}`;
}

/** JSON of one property value: bigint as a string, cycles and functions as a description. */
function jsonValue(value: unknown): string {
  const seen = new WeakSet<object>();
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'bigint') return v.toString();
    if (typeof v === 'function' || typeof v === 'symbol') return `[${typeof v}]`;
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return '[circular]';
      seen.add(v);
    }
    return v;
  });
  return text ?? 'null';
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
