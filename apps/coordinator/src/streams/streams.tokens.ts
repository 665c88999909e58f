/** Injection token of the shared {@link RedisClock}. */
export const REDIS_CLOCK = 'STREAM_COORDINATOR_SERVER:REDIS_CLOCK';

/** Injection token of the {@link ReshardDriver}. */
export const RESHARD_DRIVER = 'STREAM_COORDINATOR_SERVER:RESHARD_DRIVER';
