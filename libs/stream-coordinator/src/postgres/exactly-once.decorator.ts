import {
  applyDecorators,
  createParamDecorator,
  type ExecutionContext,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import type { PoolClient } from 'pg';
import { ExactlyOnceTransactionMissingError } from '../errors/postgres/exactly-once-transaction-missing.error.js';
import { ExactlyOnceInterceptor } from './exactly-once.interceptor.js';
import { EXACTLY_ONCE_METADATA } from './postgres-exactly-once.tokens.js';
import { transactions } from './transaction-registry.js';

/**
 * Makes a `@StreamShardHandler` apply its PostgreSQL effects exactly once per stream entry: the
 * handler runs inside a transaction that also records the entry's id for its shard, and an entry
 * already recorded (redelivered after a crash between commit and ack, or handled late by a zombie
 * owner) is acknowledged without calling the handler. Write through the `@PgTransaction()`
 * parameter; anything written elsewhere is not covered. Needs `PostgresExactlyOnceModule`.
 *
 * @publicApi
 */
export function ExactlyOnce(): MethodDecorator {
  return applyDecorators(
    SetMetadata(EXACTLY_ONCE_METADATA, true),
    UseInterceptors(ExactlyOnceInterceptor),
  );
}

/**
 * The transaction (a `pg` `PoolClient` inside `BEGIN`) of an `@ExactlyOnce()` handler. Do not
 * commit, roll back or release it: the library does, after the handler resolves (commit) or
 * throws (roll back). Throws {@link ExactlyOnceTransactionMissingError} without `@ExactlyOnce()`.
 *
 * @publicApi
 */
export const PgTransaction: () => ParameterDecorator = createParamDecorator(
  (_data: unknown, context: ExecutionContext): PoolClient => {
    const shard = context.getArgByIndex<unknown>(1);
    const tx = typeof shard === 'object' && shard !== null ? transactions.get(shard) : undefined;
    if (tx === undefined) throw new ExactlyOnceTransactionMissingError();
    return tx;
  },
);
