import { rawEntryFields } from './entry-codec.js';
import type { DeadLetterReason } from './shard-reader.types.js';

/** Longest stack trace kept in a dead-letter entry, in characters. */
const MAX_STACK_LENGTH = 2000;

/** Longest `errorProperties` JSON kept in a dead-letter entry, in characters. */
export const MAX_ERROR_PROPERTIES_LENGTH = 4096;

/** Longest `errorName` kept, in characters. */
const MAX_ERROR_NAME_LENGTH = 200;

/** Objects nested deeper than this in an error property are written as `"[depth]"`. */
const MAX_PROPERTY_DEPTH = 7;

/**
 * What a dead-letter entry records.
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
    read(() => String(input.error.message), ''),
    'errorName',
    errorName(input.error),
  );
  const properties = errorProperties(input.error);
  if (properties !== undefined) fields.push('errorProperties', properties);
  const stack = read(() => input.error.stack, undefined);
  if (typeof stack === 'string' && stack !== '') {
    fields.push('stack', stack.slice(0, MAX_STACK_LENGTH));
  }
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

/** Normalizes anything thrown into an `Error`. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : `non-Error thrown: ${safeString(thrown)}`);
}

/** `get()`, or `fallback` when it throws (an error's getters are the thrower's code). */
function read<T, F>(get: () => T, fallback: F): T | F {
  try {
    return get();
  } catch {
    return fallback;
  }
}

/** The error's class name (its constructor's, else its `name`, else its tag), bounded. */
function errorName(error: Error): string {
  const name = read(() => {
    const ctor = (error as { constructor?: { name?: unknown } }).constructor;
    return typeof ctor?.name === 'string' && ctor.name !== '' ? ctor.name : String(error.name);
  }, null);
  const tag = (): string => read(() => Object.prototype.toString.call(error).slice(8, -1), 'Error');
  return (name ?? tag()).slice(0, MAX_ERROR_NAME_LENGTH);
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
    const label = `${JSON.stringify(name)}:`;
    const value = boundedJson(
      () => (error as unknown as Record<string, unknown>)[name],
      budget - length - label.length - 1,
    );
    if (value === undefined) {
      omitted++;
      continue;
    }
    kept.push(label + value);
    length += label.length + value.length + 1;
  }
  if (omitted > 0) kept.push(`"…omitted":${omitted}`);
  return `{${kept.join(',')}}`;
}

/** Thrown by {@link boundedJson} once the budget is spent. */
const OVER_BUDGET = Symbol('over budget');

/**
 * JSON of one property value in at most `budget` characters, or `undefined` when it does not fit
 * or a getter throws. The walk stops as soon as the budget is spent, so a huge value costs no more
 * than the budget: bytes (Buffer, typed arrays, ArrayBuffer) as `"[Buffer: n bytes]"`, bigint as a
 * string, functions and symbols as `"[function]"`/`"[symbol]"`, a cycle as `"[circular]"`, objects
 * nested deeper than {@link MAX_PROPERTY_DEPTH} as `"[depth]"`.
 */
function boundedJson(get: () => unknown, budget: number): string | undefined {
  let left = budget;
  const parts: string[] = [];
  const ancestors: object[] = [];
  const emit = (text: string): void => {
    left -= text.length;
    if (left < 0) throw OVER_BUDGET;
    parts.push(text);
  };
  // Emits the value; false when JSON leaves it out (undefined).
  const walk = (value: unknown, depth: number, toJson: boolean): boolean => {
    switch (typeof value) {
      case 'undefined':
        return false;
      case 'string':
        if (value.length > left) throw OVER_BUDGET;
        emit(JSON.stringify(value));
        return true;
      case 'number':
        emit(Number.isFinite(value) ? String(value) : 'null');
        return true;
      case 'boolean':
        emit(String(value));
        return true;
      case 'bigint':
        emit(JSON.stringify(value.toString()));
        return true;
      case 'function':
      case 'symbol':
        emit(`"[${typeof value}]"`);
        return true;
    }
    if (value === null) {
      emit('null');
      return true;
    }
    const object = value as object;
    const bytes = byteLength(object);
    if (bytes !== null) {
      emit(JSON.stringify(`[${bytes.kind}: ${bytes.length} bytes]`));
      return true;
    }
    if (ancestors.includes(object)) {
      emit('"[circular]"');
      return true;
    }
    const toJSON = (object as { toJSON?: unknown }).toJSON;
    if (toJson && typeof toJSON === 'function') {
      return walk((toJSON as () => unknown).call(object), depth, false);
    }
    if (depth >= MAX_PROPERTY_DEPTH) {
      emit('"[depth]"');
      return true;
    }
    ancestors.push(object);
    if (Array.isArray(object)) {
      emit('[');
      for (let i = 0; i < object.length; i++) {
        if (i > 0) emit(',');
        if (!walk(object[i], depth + 1, true)) emit('null');
      }
      emit(']');
    } else {
      emit('{');
      let first = true;
      for (const key of Object.keys(object)) {
        const mark = parts.length;
        const spent = left;
        emit(`${first ? '' : ','}${JSON.stringify(key)}:`);
        if (walk((object as Record<string, unknown>)[key], depth + 1, true)) {
          first = false;
        } else {
          parts.length = mark;
          left = spent;
        }
      }
      emit('}');
    }
    ancestors.pop();
    return true;
  };
  try {
    if (!walk(get(), 0, true)) return 'null';
    return parts.join('');
  } catch {
    return undefined;
  }
}

/** The kind and size of a byte container, or null for any other object. */
function byteLength(value: object): { kind: string; length: number } | null {
  if (Buffer.isBuffer(value)) return { kind: 'Buffer', length: value.length };
  if (ArrayBuffer.isView(value)) {
    return { kind: Object.prototype.toString.call(value).slice(8, -1), length: value.byteLength };
  }
  if (value instanceof ArrayBuffer) return { kind: 'ArrayBuffer', length: value.byteLength };
  return null;
}

function safeString(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
