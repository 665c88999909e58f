/** The coordinator's command connection to Redis. */
export const COORDINATOR_REDIS = 'STREAM_COORDINATOR_SERVER:REDIS';
/** The coordinator's pub/sub subscriber connection. */
export const COORDINATOR_REDIS_SUBSCRIBER = 'STREAM_COORDINATOR_SERVER:REDIS_SUBSCRIBER';
