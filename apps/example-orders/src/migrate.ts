import { readFileSync } from 'node:fs';
import { offsetsTableDdl } from '@redis-stream-coordinator/nestjs/postgres';
import pg from 'pg';

/**
 * The orders example's migration, in one transaction: the library's offsets table (the text of
 * the package's `sql/exactly-once-offsets.sql`) and the app's `sql/001-orders.sql`. Idempotent.
 * Usage: `DATABASE_URL=postgres://… node apps/example-orders/dist/migrate.js`.
 */
async function migrate(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL must name the PostgreSQL to migrate');
  const orders = readFileSync(new URL('../sql/001-orders.sql', import.meta.url), 'utf8');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(offsetsTableDdl());
    await client.query(orders);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
  process.stdout.write('orders: offsets table and orders table in place\n');
}

migrate().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
