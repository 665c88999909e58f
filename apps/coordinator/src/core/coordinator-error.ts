import type { ProtocolErrorCode } from '@redis-stream-coordinator/nestjs/protocol';

/**
 * A protocol-level refusal raised by the pure core (fencing, unknown member, ...). The HTTP layer
 * turns it into `{"error": {"code", "message"}}` with the status docs/protocol.md §2.3 assigns
 * to `code`.
 * Raising it never leaves a partial change behind: the core works on a transaction that is only
 * committed after the whole request succeeded.
 */
export class CoordinatorError extends Error {
  override readonly name = 'CoordinatorError';

  constructor(
    readonly code: ProtocolErrorCode,
    message: string,
  ) {
    super(message);
  }
}
