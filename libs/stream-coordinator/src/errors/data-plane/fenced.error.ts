import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Redis refused a data-plane command because the shard's fence (meta field `owner:<group>`)
 * does not name this member: the coordinator has given the shard to someone else (or it was
 * removed). The reader stops at once and reports the shard lost; nothing it handled after the
 * fence moved is acknowledged.
 */
export class FencedError extends StreamCoordinatorError {
  override readonly name = 'FencedError';

  constructor(
    /** The shard stream key. */
    readonly key: string,
    /** The consumer group. */
    readonly group: string,
    /** The member that was refused. */
    readonly memberId: string,
    /** The fence token found in the meta hash, or `null` when there is none. */
    readonly currentOwner: string | null,
  ) {
    super(
      `Shard ${key} is fenced for member ${memberId} of group ${group}: ` +
        `the owner is ${currentOwner ?? '(none)'}. The coordinator moved the shard; this member ` +
        'must stop handling it.',
    );
  }

  /**
   * Turns a Redis `FENCED owner=<token> …` error reply into a {@link FencedError}; returns
   * `undefined` for any other error.
   */
  static fromReply(
    error: unknown,
    key: string,
    group: string,
    memberId: string,
  ): FencedError | undefined {
    if (!(error instanceof Error) || !error.message.startsWith('FENCED')) return undefined;
    const owner = /owner=(\S+)/.exec(error.message)?.[1];
    return new FencedError(
      key,
      group,
      memberId,
      owner === undefined || owner === '-' ? null : owner,
    );
  }
}
