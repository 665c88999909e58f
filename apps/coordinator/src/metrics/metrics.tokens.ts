/** The coordinator's prom-client registry. */
export const COORDINATOR_METRICS_REGISTRY = 'STREAM_COORDINATOR_SERVER:METRICS_REGISTRY';
/** The observer the group coordinator reports to. */
export const COORDINATOR_METRICS_OBSERVER = 'STREAM_COORDINATOR_SERVER:METRICS_OBSERVER';
