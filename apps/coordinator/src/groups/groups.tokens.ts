/** Injection tokens of the group protocol's plain (non-Nest) classes, provided by `GroupsModule`. */
export const GROUP_COORDINATOR = 'STREAM_COORDINATOR_SERVER:GROUP_COORDINATOR';
export const SESSION_TIMERS = 'STREAM_COORDINATOR_SERVER:SESSION_TIMERS';
export const REDIS_DATA_LOSS = 'STREAM_COORDINATOR_SERVER:REDIS_DATA_LOSS';
