import type { ProtocolErrorCode } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorError } from '../core/coordinator-error.js';

/**
 * A protocol error sent with a status other than the code's usual one. docs/protocol.md §2.3 gives
 * one code two statuses: UNKNOWN_MEMBER_ID is 409 on the member routes but 404 on the admin
 * `DELETE /v1/groups/{groupId}/members/{memberId}`.
 */
export class StatusOverrideError extends CoordinatorError {
  constructor(
    code: ProtocolErrorCode,
    message: string,
    readonly status: number,
  ) {
    super(code, message);
  }

  /** `error` with `status` when it carries `code`; any other error unchanged. */
  static remap(error: unknown, code: ProtocolErrorCode, status: number): unknown {
    if (error instanceof CoordinatorError && error.code === code) {
      return new StatusOverrideError(error.code, error.message, status);
    }
    return error;
  }
}
