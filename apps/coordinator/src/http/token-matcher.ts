import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Compares presented bearer tokens with the configured ones in constant time: every configured
 * token is compared (no early exit), on SHA-256 digests so lengths never leak either.
 */
export class TokenMatcher {
  private readonly digests: Buffer[];

  constructor(tokens: readonly string[]) {
    this.digests = tokens.map((t) => digest(t));
  }

  /** SHA-256 of a presented token, to check it against several matchers with one hash. */
  static digest(presented: string): Buffer {
    return digest(presented);
  }

  /** True when `presented` equals one of the configured tokens. */
  matches(presented: string): boolean {
    return this.matchesDigest(digest(presented));
  }

  /** Like {@link matches}, for a token already hashed with {@link TokenMatcher.digest}. */
  matchesDigest(candidate: Buffer): boolean {
    let found = false;
    for (const d of this.digests) found = timingSafeEqual(d, candidate) || found;
    return found;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
