import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Redis answered a reader's command with an error reply. The message is Redis's own text,
 * unchanged (`NOGROUP …`, `NOSCRIPT …`, a script's `FENCED …`), so the data plane can tell what
 * it was; `code` is its first word.
 */
export class RedisReplyError extends StreamCoordinatorError {
  override readonly name = 'RedisReplyError';
  /** The reply's first word (`ERR`, `NOGROUP`, `WRONGPASS`, …). */
  readonly code: string;

  constructor(reply: string) {
    super(reply);
    const space = reply.indexOf(' ');
    this.code = space < 0 ? reply : reply.slice(0, space);
  }
}
