import type { ProtocolErrorCode } from '../../protocol/index.js';
import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A request to the coordinator failed: `code` is the protocol error code, or `null` when the
 * coordinator could not be reached, timed out, or answered without a protocol error body.
 */
export class CoordinatorRequestError extends StreamCoordinatorError {
  override readonly name = 'CoordinatorRequestError';

  constructor(
    readonly code: ProtocolErrorCode | null,
    readonly status: number,
    message: string,
  ) {
    super(code ? `${code}: ${message}` : message);
  }
}
