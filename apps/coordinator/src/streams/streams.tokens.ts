/** Injection token of the shared {@link RedisClock}. */
export const REDIS_CLOCK = 'STREAM_COORDINATOR_SERVER:REDIS_CLOCK';
