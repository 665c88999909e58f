/**
 * Redis still holds the control plane in the old key layout (`<prefix>:{m}:streams` …):
 * a coordinator of this version would start on an empty catalog, declare `STREAMS` afresh and
 * lose every group. It refuses to start instead; the message says how to migrate.
 */
export class LegacyKeyLayoutError extends Error {
  override readonly name = 'LegacyKeyLayoutError';

  constructor(readonly found: readonly string[]) {
    super(
      `Redis holds coordinator state in the old key layout (${found.join(', ')}). ` +
        'Stop every coordinator replica, then run `npm run migrate-keys` (or ' +
        '`node apps/coordinator/dist/key-layout/migrate-keys-main.js`) with the same REDIS_URL ' +
        'and KEY_PREFIX, and start the coordinators again (docs/operations.md, "Moving to the ' +
        'current key layout").',
    );
  }
}
