import { DeadLetterArgumentError } from '../errors/dead-letters/dead-letter-argument.error.js';
import {
  DEAD_LETTER_REASONS,
  type DeadLetterEntry,
  type DeadLetterFilter,
  type DeadLetterReplayMark,
} from '../protocol/dead-letter.types.js';
import { NAME_PATTERN } from '../protocol/limits.js';

/** A dead-letter stream id: `<ms>-<seq>`, two decimal integers of at most 20 digits. */
const ENTRY_ID = /^\d{1,20}-\d{1,20}$/;

/** Longest `error` filter text, in characters. */
const MAX_ERROR_FILTER_LENGTH = 1000;

/**
 * Reads one dead-letter stream entry (`deadLetterFields`) into its API shape. Missing or
 * malformed fields become `null`, so an entry written by an older version still shows.
 */
export function parseDeadLetterEntry(
  stream: string,
  id: string,
  fields: readonly Buffer[],
  replay: DeadLetterReplayMark | null = null,
): DeadLetterEntry {
  const raw = new Map<string, Buffer>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    raw.set((fields[i] as Buffer).toString(), fields[i + 1] as Buffer);
  }
  const text = (name: string): string | null => raw.get(name)?.toString() ?? null;
  const int = (name: string): number | null => {
    const value = Number(text(name));
    return text(name) !== null && Number.isSafeInteger(value) ? value : null;
  };
  const payload = raw.get('payload');
  return {
    id,
    stream: text('stream') ?? stream,
    shard: int('shard'),
    group: text('group'),
    originalId: text('id'),
    reason: text('reason'),
    error: text('error'),
    errorName: text('errorName'),
    errorProperties: jsonObject(text('errorProperties')),
    stack: text('stack'),
    deliveryCount: int('deliveryCount'),
    memberId: text('memberId'),
    failedAt: text('failedAt'),
    key: text('key'),
    payload: payload === undefined ? null : utf8(payload),
    payloadBase64: payload === undefined ? null : payload.toString('base64'),
    headers: stringRecord(jsonObject(text('headers'))),
    replay,
  };
}

/** A replay mark read from the replays hash, or `null` when absent or malformed. */
export function parseReplayMark(value: string | null | undefined): DeadLetterReplayMark | null {
  const object = jsonObject(value ?? null);
  if (object === null || (object.state !== 'pending' && object.state !== 'done')) return null;
  return {
    state: object.state,
    at: typeof object.ms === 'number' ? new Date(object.ms).toISOString() : '',
    ...(typeof object.entryId === 'string' ? { entryId: object.entryId } : {}),
    ...(typeof object.shardKey === 'string' ? { shardKey: object.shardKey } : {}),
  };
}

/**
 * Whether `entry` passes every field of `filter` (the time range is checked on the entry id,
 * which Redis set when the entry was dead-lettered).
 */
export function matchesDeadLetterFilter(entry: DeadLetterEntry, filter: DeadLetterFilter): boolean {
  if (filter.group !== undefined && entry.group !== filter.group) return false;
  if (filter.reason !== undefined && entry.reason !== filter.reason) return false;
  if (filter.error !== undefined) {
    const needle = filter.error.toLowerCase();
    const haystack = `${entry.errorName ?? ''}\n${entry.error ?? ''}`.toLowerCase();
    if (!haystack.includes(needle)) return false;
  }
  const ms = Number(entry.id.slice(0, entry.id.indexOf('-')));
  if (filter.fromMs !== undefined && ms < filter.fromMs) return false;
  if (filter.toMs !== undefined && ms > filter.toMs) return false;
  if (filter.replayed !== undefined && (entry.replay?.state === 'done') !== filter.replayed)
    return false;
  return true;
}

/**
 * Checks a filter's fields, or throws {@link DeadLetterArgumentError} naming the bad one.
 */
export function checkDeadLetterFilter(filter: DeadLetterFilter): DeadLetterFilter {
  if (typeof filter !== 'object' || filter === null) {
    throw new DeadLetterArgumentError('the dead-letter filter must be an object');
  }
  if (
    filter.group !== undefined &&
    (typeof filter.group !== 'string' || !NAME_PATTERN.test(filter.group))
  ) {
    throw new DeadLetterArgumentError(
      `filter "group" must be 1-128 characters of [A-Za-z0-9._-], got ${JSON.stringify(filter.group)}`,
    );
  }
  if (
    filter.reason !== undefined &&
    !(DEAD_LETTER_REASONS as readonly unknown[]).includes(filter.reason)
  ) {
    throw new DeadLetterArgumentError(
      `filter "reason" must be one of ${DEAD_LETTER_REASONS.join(', ')}, got ${JSON.stringify(filter.reason)}`,
    );
  }
  if (
    filter.error !== undefined &&
    (typeof filter.error !== 'string' ||
      filter.error.length === 0 ||
      filter.error.length > MAX_ERROR_FILTER_LENGTH)
  ) {
    throw new DeadLetterArgumentError(
      `filter "error" must be a text of 1-${MAX_ERROR_FILTER_LENGTH} characters`,
    );
  }
  for (const name of ['fromMs', 'toMs'] as const) {
    const value = filter[name];
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 0)) {
      throw new DeadLetterArgumentError(
        `filter "${name}" must be a time in ms since the epoch (an integer ≥ 0), got ${String(value)}`,
      );
    }
  }
  if (filter.fromMs !== undefined && filter.toMs !== undefined && filter.fromMs > filter.toMs) {
    throw new DeadLetterArgumentError(
      `filter "fromMs" (${filter.fromMs}) is after "toMs" (${filter.toMs})`,
    );
  }
  if (filter.replayed !== undefined && typeof filter.replayed !== 'boolean') {
    throw new DeadLetterArgumentError('filter "replayed" must be a boolean');
  }
  return filter;
}

/** Throws {@link DeadLetterArgumentError} unless `id` is a stream entry id. */
export function checkDeadLetterId(id: unknown): string {
  if (typeof id !== 'string' || !ENTRY_ID.test(id)) {
    throw new DeadLetterArgumentError(
      `a dead-letter entry id must look like 1700000000000-0, got ${JSON.stringify(id)}`,
    );
  }
  return id;
}

/** Throws {@link DeadLetterArgumentError} unless `stream` is a valid stream name. */
export function checkDeadLetterStream(stream: unknown): string {
  if (typeof stream !== 'string' || !NAME_PATTERN.test(stream)) {
    throw new DeadLetterArgumentError(
      `stream must be 1-128 characters of [A-Za-z0-9._-], got ${JSON.stringify(stream)}`,
    );
  }
  return stream;
}

function utf8(bytes: Buffer): string | null {
  const text = bytes.toString('utf8');
  return Buffer.byteLength(text) === bytes.length && !text.includes('\uFFFD') ? text : null;
}

function jsonObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function stringRecord(value: Record<string, unknown> | null): Record<string, string> | null {
  if (value === null) return null;
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) if (typeof v === 'string') out[name] = v;
  return out;
}
