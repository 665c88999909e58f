import { UndecodableEntryError } from '../errors/data-plane/undecodable-entry.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import { ShardMessage } from './shard-message.js';

/**
 * # Shard entry encoding
 *
 * Producers in any language write one Redis Stream entry per message with `XADD <shardKey> *`
 * (auto-generated id) and these field/value pairs, in this order:
 *
 * | field     | value                                                                       |
 * |-----------|-----------------------------------------------------------------------------|
 * | `key`     | the routing key, UTF-8 text (the key hashed by the routing function)        |
 * | `payload` | the serializer's output; by default the UTF-8 JSON text of the value        |
 * | `headers` | optional; a JSON object of string → string (UTF-8); omitted when empty      |
 *
 * Other fields are ignored. The message's `publishedAt` is the time part (`<ms>`) of the entry
 * id, so no timestamp field is written. Writes must go through the shard's `open` check (see
 * the publish script) so a closed shard is never written to.
 *
 * An entry without `key` or `payload`, with `headers` that are not a JSON object of strings, or
 * whose payload the serializer cannot decode is **undecodable**: it is dead-lettered at once,
 * without retries (retrying cannot make it decodable), then acknowledged. The payload is decoded
 * when the handler first reads `message.payload` (a handler that never reads it never pays for
 * it); a payload that fails then makes that read throw {@link UndecodableEntryError}, and the
 * entry is dead-lettered whatever the handler did next.
 */
export const ENTRY_FIELDS = { key: 'key', payload: 'payload', headers: 'headers' } as const;

const KEY = Buffer.from(ENTRY_FIELDS.key);
const PAYLOAD = Buffer.from(ENTRY_FIELDS.payload);
const HEADERS = Buffer.from(ENTRY_FIELDS.headers);

/** Headers of a message without headers (shared, frozen). */
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/**
 * The decoded `key`/`payload`/`headers` fields of an entry as raw bytes (any may be missing).
 */
export interface RawEntryFields {
  key?: Buffer;
  payload?: Buffer;
  headers?: Buffer;
}

/**
 * The field/value arguments of one entry, for `XADD` (or the publish script).
 */
export function encodeEntryFields(
  key: string,
  payload: string | Buffer,
  headers?: Readonly<Record<string, string>>,
): Array<string | Buffer> {
  const fields: Array<string | Buffer> = [ENTRY_FIELDS.key, key, ENTRY_FIELDS.payload, payload];
  const encoded = encodeHeaders(headers);
  if (encoded !== '') fields.push(ENTRY_FIELDS.headers, encoded);
  return fields;
}

/**
 * The `headers` field value: JSON text, or `''` when there are no headers.
 *
 * @throws TypeError when a header value is not a string.
 */
export function encodeHeaders(headers: Readonly<Record<string, string>> | undefined): string {
  if (headers === undefined) return '';
  let empty = true;
  for (const name in headers) {
    empty = false;
    if (typeof headers[name] !== 'string') {
      throw new TypeError(
        `header ${JSON.stringify(name)} must be a string, got ${typeof headers[name]}`,
      );
    }
  }
  return empty ? '' : JSON.stringify(headers);
}

/**
 * Picks the `key`, `payload` and `headers` fields out of a flat `field, value, …` list.
 */
export function rawEntryFields(fields: readonly Buffer[]): RawEntryFields {
  const out: RawEntryFields = {};
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as Buffer;
    const value = fields[i + 1] as Buffer;
    if (name.length === 3 && name.equals(KEY)) out.key = value;
    else if (name.length === 7 && name.equals(PAYLOAD)) out.payload = value;
    else if (name.length === 7 && name.equals(HEADERS)) out.headers = value;
  }
  return out;
}

/**
 * Decodes one entry into the message handed to the handler. The `key` and `headers` fields are
 * decoded here; the payload when the message's `payload` is first read (see {@link ShardMessage}).
 *
 * @throws UndecodableEntryError when the entry has no `key` or `payload`, or bad `headers`.
 */
export function decodeEntry(
  id: string,
  fields: readonly Buffer[],
  deliveryCount: number,
  stream: string,
  shard: number,
  serializer: PayloadSerializer,
): ShardMessage {
  let key: Buffer | undefined;
  let payload: Buffer | undefined;
  let headers: Buffer | undefined;
  // field names compared byte by byte (Buffer#equals is a native call, costly for 3-7 bytes)
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name = fields[i] as Buffer;
    if (name.length === 3) {
      if (name[0] === 0x6b && name[1] === 0x65 && name[2] === 0x79) key = fields[i + 1];
    } else if (name.length === 7) {
      if (isName(name, PAYLOAD)) payload = fields[i + 1];
      else if (isName(name, HEADERS)) headers = fields[i + 1];
    }
  }
  if (key === undefined) throw new UndecodableEntryError(id, 'it has no "key" field');
  if (payload === undefined) throw new UndecodableEntryError(id, 'it has no "payload" field');
  return ShardMessage.encoded(
    id,
    stream,
    shard,
    key.toString(), // UTF-8 (no argument: Node's fast path)
    payload,
    serializer,
    headers === undefined ? NO_HEADERS : decodeHeaders(id, headers),
    deliveryCount,
  );
}

/** `name` (as long as `expected`) holds the bytes of `expected`. */
function isName(name: Buffer, expected: Buffer): boolean {
  for (let i = 0; i < expected.length; i++) if (name[i] !== expected[i]) return false;
  return true;
}

function decodeHeaders(id: string, raw: Buffer): Readonly<Record<string, string>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new UndecodableEntryError(id, 'its "headers" field is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UndecodableEntryError(id, 'its "headers" field is not a JSON object');
  }
  for (const value of Object.values(parsed)) {
    if (typeof value !== 'string') {
      throw new UndecodableEntryError(id, 'its "headers" field has a non-string value');
    }
  }
  return parsed as Record<string, string>;
}
