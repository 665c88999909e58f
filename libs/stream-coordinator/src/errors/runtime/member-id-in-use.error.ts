import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The coordinator refused this member's join (`MEMBER_ID_IN_USE`): a live member of another
 * process holds the same member id — two processes were given one fixed `memberId`. The member
 * keeps retrying with backoff, and joins once the other one leaves or its session expires.
 */
export class MemberIdInUseError extends StreamCoordinatorError {
  override readonly name = 'MemberIdInUseError';

  constructor(
    readonly memberId: string,
    readonly group: string,
    detail: string,
  ) {
    super(
      `member id "${memberId}" is already used by a live member of group "${group}" in another process (${detail}); give every process its own memberId (the default derives one from the pod and process), or stop the other process; retrying until that member leaves or its session expires`,
    );
  }
}
