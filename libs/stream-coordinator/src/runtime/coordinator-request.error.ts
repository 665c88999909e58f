import type { ProtocolErrorCode } from '../protocol/index.js';

/**
 * A request to the coordinator failed: `code` is the protocol error code, or `null` when the
 * coordinator could not be reached, timed out, or answered without a protocol error body.
 *
 * @publicApi
 */
export class CoordinatorRequestError extends Error {
  override readonly name = 'CoordinatorRequestError';

  constructor(
    readonly code: ProtocolErrorCode | null,
    readonly status: number,
    message: string,
  ) {
    super(code ? `${code}: ${message}` : message);
  }
}
