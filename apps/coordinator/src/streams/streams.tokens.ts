/** Injection token of the {@link ReshardDriver}. */
export const RESHARD_DRIVER = 'STREAM_COORDINATOR_SERVER:RESHARD_DRIVER';
