/** Injection token of the {@link ReshardDriver}. */
export const RESHARD_DRIVER = 'STREAM_COORDINATOR_SERVER:RESHARD_DRIVER';

/** Injection token of the library's `DeadLetterService` (the dead-letter routes). */
export const DEAD_LETTER_SERVICE = 'STREAM_COORDINATOR_SERVER:DEAD_LETTER_SERVICE';
