/**
 * The delivery invariant checker the end-to-end and chaos suites share: pure checking
 * ({@link checkInvariants}, {@link formatInvariantReport}) and the readers that collect its
 * inputs (the coordinator's event log, the final Redis state; the worker record files are read by
 * `../handled-records.ts`).
 */
export { checkInvariants } from './invariant-checker.js';
export { formatInvariantReport } from './invariant-summary.js';
export { ownershipFromEvents, fetchGroupEvents } from './ownership-timeline.js';
export { eventsOnMachineClock, type RedisClockStep } from './redis-clock-steps.js';
export { readPendingSnapshot, readDeadLetters, type ShardKey } from './redis-state.reader.js';
export type * from './invariant-input.types.js';
export type * from './invariant-report.types.js';
