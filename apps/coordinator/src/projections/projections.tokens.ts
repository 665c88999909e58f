/** Injection token of the coordinator's {@link GroupProjector}. */
export const GROUP_PROJECTOR = 'STREAM_COORDINATOR_SERVER:GROUP_PROJECTOR';
