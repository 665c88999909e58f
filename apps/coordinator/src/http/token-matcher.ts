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

  /** True when `presented` equals one of the configured tokens. */
  matches(presented: string): boolean {
    const candidate = digest(presented);
    let found = false;
    for (const d of this.digests) found = timingSafeEqual(d, candidate) || found;
    return found;
  }
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
