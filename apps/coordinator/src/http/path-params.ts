import { CoordinatorError } from '../core/coordinator-error.js';
import { ID_PATTERN, NAME_PATTERN } from '@redis-stream-coordinator/nestjs/protocol';

/** Validates a `{groupId}` path segment. */
export function groupIdParam(value: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `path parameter "groupId" must be 1-128 characters of [A-Za-z0-9._-] (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}

/** Validates a `{stream}` path segment. */
export function streamParam(value: string): string {
  if (!NAME_PATTERN.test(value)) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `path parameter "stream" must be 1-128 characters of [A-Za-z0-9._-] (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}

/** Validates a URL-decoded `{memberId}` path segment. */
export function memberIdParam(value: string): string {
  if (!ID_PATTERN.test(value)) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `path parameter "memberId" must be 1-255 printable ASCII characters (got ${JSON.stringify(value)})`,
    );
  }
  return value;
}
