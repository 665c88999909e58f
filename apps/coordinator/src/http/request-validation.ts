import { PROTOCOL_LIMITS } from '@redis-stream-coordinator/nestjs/protocol';
import type { z } from 'zod';
import { CoordinatorError } from '../core/coordinator-error.js';

/** Formats a zod issue path like `ownedShards[0].shards`. */
function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** Turns the first zod issue into an INVALID_REQUEST naming the field. */
function toInvalidRequest(where: string, error: z.ZodError): CoordinatorError {
  const issue = error.issues[0];
  if (!issue) return new CoordinatorError('INVALID_REQUEST', `${where} is invalid`);
  if (issue.code === 'unrecognized_keys') {
    const base = formatPath(issue.path);
    const keys = issue.keys.map((k) => (base ? `${base}.${k}` : k));
    return new CoordinatorError(
      'INVALID_REQUEST',
      `${where}: unknown field ${keys.map((k) => `"${k}"`).join(', ')}`,
    );
  }
  const path = formatPath(issue.path);
  return new CoordinatorError(
    'INVALID_REQUEST',
    path ? `${where}: field "${path}" ${issue.message}` : `${where} ${issue.message}`,
  );
}

/** Validates any value against a schema, or throws INVALID_REQUEST naming the field. */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: string,
): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw toInvalidRequest(where, parsed.error);
  return parsed.data;
}

/** `application/json`, or `application/<anything>+json`, with optional parameters (charset). */
const JSON_CONTENT_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;.*)?$/i;

/** How {@link decodeBody} treats a request. */
export interface DecodeBodyOptions {
  /** The request's `Content-Type` header (a non-empty body must be JSON). */
  readonly contentType: string | string[] | undefined;
  /** An empty body counts as `{}` (routes whose body is optional). */
  readonly allowEmpty?: boolean;
}

/**
 * Decodes a request body kept raw by the HTTP layer: size limit (413), content type, JSON and
 * schema (400), in that order — after authentication, which ran in the guard
 * (docs/protocol.md §2.4).
 */
export function decodeBody<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  options: DecodeBodyOptions,
): z.output<S> {
  const text = Buffer.isBuffer(raw) ? raw : typeof raw === 'string' ? Buffer.from(raw) : null;
  if (text === null || text.length === 0) {
    if (options.allowEmpty) return validate(schema, {}, 'request body');
    throw new CoordinatorError('INVALID_REQUEST', 'request body is required (a JSON object)');
  }
  if (text.length > PROTOCOL_LIMITS.maxBodyBytes) {
    throw new CoordinatorError(
      'PAYLOAD_TOO_LARGE',
      `request body is ${text.length} bytes; the limit is ${PROTOCOL_LIMITS.maxBodyBytes} bytes (1 MiB)`,
    );
  }
  const contentType = Array.isArray(options.contentType)
    ? options.contentType.join(', ')
    : options.contentType;
  if (contentType === undefined || !JSON_CONTENT_TYPE.test(contentType.trim())) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `request body must be sent with "Content-Type: application/json" (got ${contentType === undefined ? 'no Content-Type' : JSON.stringify(contentType)})`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text.toString('utf8'));
  } catch (error) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `request body is not valid JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  return validate(schema, value, 'request body');
}
