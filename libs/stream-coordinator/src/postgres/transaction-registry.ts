import type { PoolClient } from 'pg';

/**
 * The transaction of each exactly-once call in progress, by the message's `StreamShardContext`
 * (the second execution-context argument): the interceptor puts it, `@PgTransaction()` reads it.
 */
export const transactions = new WeakMap<object, PoolClient>();
