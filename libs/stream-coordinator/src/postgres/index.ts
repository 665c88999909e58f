/**
 * `@redis-stream-coordinator/nestjs/postgres`: exactly-once effects into PostgreSQL (needs `pg`).
 * Only applications that import this entry point load `pg`. See docs/exactly-once.md.
 *
 * @packageDocumentation
 */
export { PostgresExactlyOnceModule } from './postgres-exactly-once.module.js';
export {
  PostgresExactlyOnce,
  type ExactlyOnceEntry,
  type ExactlyOnceOutcome,
} from './postgres-exactly-once.js';
export type {
  PostgresExactlyOnceAsyncOptions,
  PostgresExactlyOnceOptions,
} from './postgres-exactly-once-options.interface.js';
export { ExactlyOnce, PgTransaction } from './exactly-once.decorator.js';
export { ExactlyOnceInterceptor } from './exactly-once.interceptor.js';
export { createExactlyOnceTable, offsetsTableDdl, DEFAULT_OFFSETS_TABLE } from './offsets-table.js';
export {
  InvalidStreamEntryIdError,
  InvalidExactlyOnceOptionsError,
  ExactlyOnceTransactionMissingError,
  ExactlyOnceBatchError,
  ExactlyOnceEntryDeadLetteredError,
  ExactlyOnceTableOutdatedError,
  ExactlyOnceUnsupportedHandlerError,
} from '../errors/postgres/index.js';
