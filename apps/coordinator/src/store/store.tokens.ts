/** Injection tokens of the persistence layer's plain (non-Nest) classes, provided by `StoreModule`. */
export const KEY_SPACE = 'STREAM_COORDINATOR_SERVER:KEY_SPACE';
export const GROUP_STORE = 'STREAM_COORDINATOR_SERVER:GROUP_STORE';
export const STREAM_REGISTRY = 'STREAM_COORDINATOR_SERVER:STREAM_REGISTRY';
/** Injection token of the shared {@link RedisClock}. */
export const REDIS_CLOCK = 'STREAM_COORDINATOR_SERVER:REDIS_CLOCK';
