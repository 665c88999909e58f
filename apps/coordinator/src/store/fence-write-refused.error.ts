import type { FenceStamp } from './fence-stamp.js';

/**
 * Fence writes the data plane refused because it records a newer — or an equal but different —
 * decision for those shards than the one written. Either the group changed meanwhile (another
 * replica decided later: the refused write is obsolete and the state must be reloaded), or Redis
 * holds a decision the group's committed state does not know (Redis lost writes, or a bug): the
 * members the refused writes named do not own those shards in the data plane, so this is never
 * ignored.
 */
export class FenceWriteRefusedError extends Error {
  override readonly name = 'FenceWriteRefusedError';

  constructor(
    readonly groupId: string,
    readonly stamp: FenceStamp,
    readonly shards: ReadonlyArray<readonly [stream: string, shard: number]>,
  ) {
    super(
      `group "${groupId}": the data-plane fence refused the writes of commit ${stamp.incarnation}:${stamp.version}:${stamp.commitId} for ${shards
        .map(([stream, shard]) => `${stream}/${shard}`)
        .join(
          ', ',
        )} (it records a newer or a different decision); the group state is reloaded — if this repeats, Redis lost writes or the fence and group state disagree: see docs/operations.md, "When Redis loses writes"`,
    );
  }
}
