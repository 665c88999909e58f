/** Injection token of the validated {@link CoordinatorConfig}. */
export const COORDINATOR_CONFIG = 'STREAM_COORDINATOR_SERVER:CONFIG';
