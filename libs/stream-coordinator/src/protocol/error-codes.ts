/**
 * Error codes of the coordinator's wire protocol (docs/protocol.md §2.3) and the HTTP status that
 * carries each of them.
 *
 * @publicApi
 */
export const PROTOCOL_ERROR_STATUS = {
  INVALID_REQUEST: 400,
  UNSUPPORTED_ASSIGNOR: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  GROUP_ID_NOT_FOUND: 404,
  STREAM_NOT_FOUND: 404,
  NOT_FOUND: 404,
  UNKNOWN_MEMBER_ID: 409,
  FENCED_MEMBER_EPOCH: 409,
  UNRELEASED_INSTANCE_ID: 409,
  MEMBER_ID_IN_USE: 409,
  FENCED_INSTANCE_ID: 409,
  GROUP_MAX_SIZE_REACHED: 409,
  MAX_GROUPS_REACHED: 409,
  GROUP_NOT_EMPTY: 409,
  STALE_ROUTING: 409,
  STREAM_EXISTS: 409,
  RESHARD_IN_PROGRESS: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMITED: 429,
  COORDINATOR_NOT_AVAILABLE: 503,
} as const;

/**
 * A protocol error code.
 *
 * @publicApi
 */
export type ProtocolErrorCode = keyof typeof PROTOCOL_ERROR_STATUS;

/**
 * The body of every non-2xx response: `{"error": {"code", "message"}}`.
 *
 * @publicApi
 */
export interface ProtocolErrorBody {
  error: { code: ProtocolErrorCode; message: string };
}

/**
 * Codes after which a member drops all its shards as lost and rejoins with epoch 0.
 *
 * @publicApi
 */
export const REJOIN_ERROR_CODES: ReadonlySet<ProtocolErrorCode> = new Set<ProtocolErrorCode>([
  'UNKNOWN_MEMBER_ID',
  'FENCED_MEMBER_EPOCH',
  'GROUP_ID_NOT_FOUND',
]);

/**
 * Codes that are final for a join: retrying the same request cannot succeed.
 *
 * @publicApi
 */
export const FATAL_ERROR_CODES: ReadonlySet<ProtocolErrorCode> = new Set<ProtocolErrorCode>([
  'INVALID_REQUEST',
  'UNSUPPORTED_ASSIGNOR',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'UNRELEASED_INSTANCE_ID',
  'MEMBER_ID_IN_USE',
  'FENCED_INSTANCE_ID',
  'GROUP_MAX_SIZE_REACHED',
  'MAX_GROUPS_REACHED',
  'PAYLOAD_TOO_LARGE',
]);

/**
 * Type guard for a protocol error body received from the coordinator.
 *
 * @publicApi
 */
export function isProtocolErrorBody(value: unknown): value is ProtocolErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const error = (value as { error?: unknown }).error;
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'string' && code in PROTOCOL_ERROR_STATUS && typeof message === 'string';
}
