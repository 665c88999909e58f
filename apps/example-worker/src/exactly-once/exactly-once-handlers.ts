import { type DynamicModule, Injectable, type OnModuleInit, type Provider } from '@nestjs/common';
import {
  PostgresExactlyOnce,
  PostgresExactlyOnceModule,
} from '@redis-stream-coordinator/nestjs/postgres';
import type { WorkerConfig } from '../worker-config.js';
import { ORDERS_HANDLER } from '../worker.tokens.js';
import { CommitCrashHook } from './commit-crash-hook.js';
import { ExactlyOnceOrdersHandler, ORDER_EFFECTS_DDL } from './exactly-once-orders.handler.js';

/** Creates `order_effects` at start (an app would run a migration). */
@Injectable()
class OrderEffectsTable implements OnModuleInit {
  constructor(private readonly exactlyOnce: PostgresExactlyOnce) {}

  async onModuleInit(): Promise<void> {
    // Workers start together: two concurrent CREATE TABLE IF NOT EXISTS of one table can fail
    // (a duplicate key in pg_type), so they take turns on a transaction's advisory lock.
    const client = await this.exactlyOnce.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('order_effects DDL', 0))");
      await client.query(ORDER_EFFECTS_DDL);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }
}

/**
 * The exactly-once mode's modules and handlers: `PostgresExactlyOnceModule` with a pool of its
 * own on `EXACTLY_ONCE_DATABASE_URL` (the offsets table and `order_effects` created at start).
 */
export function exactlyOnceHandlers(config: WorkerConfig): {
  imports: DynamicModule[];
  providers: Provider[];
} {
  return {
    imports: [
      PostgresExactlyOnceModule.forRoot({
        connectionString: config.exactlyOnceDatabaseUrl,
        maxConnections: 8,
        createTable: true,
      }),
    ],
    providers: [
      OrderEffectsTable,
      ExactlyOnceOrdersHandler,
      { provide: ORDERS_HANDLER, useExisting: ExactlyOnceOrdersHandler },
      CommitCrashHook,
    ],
  };
}
