/**
 * The event log cannot be folded on from the projection (a version is missing: entries were
 * trimmed, or the group was deleted and created again). The projector then rebuilds from the
 * newest checkpoint.
 */
export class ProjectionGapError extends Error {
  override readonly name = 'ProjectionGapError';

  constructor(
    readonly groupId: string,
    readonly expectedVersion: number,
    readonly foundVersion: number,
    readonly eventId: string,
  ) {
    super(
      `event log of group "${groupId}" jumps from version ${expectedVersion - 1} to ${foundVersion} at ${eventId}: entries are missing`,
    );
  }
}

/**
 * A group cannot be rebuilt from its event log: the retained log holds no checkpoint and does not
 * start with the group's first change (written by a coordinator older than projections, or
 * trimmed by hand). The next commit to the group writes a checkpoint.
 */
export class ProjectionUnavailableError extends Error {
  override readonly name = 'ProjectionUnavailableError';

  constructor(
    readonly groupId: string,
    why: string,
  ) {
    super(`group "${groupId}" cannot be rebuilt from its event log: ${why}`);
  }
}
