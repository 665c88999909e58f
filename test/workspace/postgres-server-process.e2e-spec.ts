import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isPortListening } from '../support/free-port.js';
import { type PrivatePostgres, startPrivatePostgres } from '../support/postgres-server-process.js';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

// The private cluster the PostgreSQL restart tests stop and start (the shared server on 5432
// must not be restarted).
describe('support: a private PostgreSQL cluster', () => {
  let server: PrivatePostgres | undefined;
  afterAll(async () => {
    await server?.dispose();
  });

  it('keeps committed rows across an immediate and a fast stop, then disposes of everything', async () => {
    server = await startPrivatePostgres();
    await query(server.url, 'CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)');
    const held = new pg.Client({ connectionString: server.url });
    held.on('error', () => undefined);
    await held.connect();

    await server.stop('immediate');
    expect(server.running).toBe(false);
    expect(await isPortListening(server.port)).toBe(false);
    // the open connection is dead
    await expect(held.query('SELECT 1')).rejects.toThrow();
    await held.end().catch(() => undefined);

    await server.start();
    expect(server.running).toBe(true);
    await query(server.url, 'INSERT INTO kept VALUES (2)');
    await server.stop('fast');
    await server.start();
    const rows = await query<{ n: number }>(server.url, 'SELECT n FROM kept ORDER BY n');
    expect(rows.map((r) => r.n)).toEqual([1, 2]);

    const dir = dirname(server.dataDir);
    await server.dispose();
    expect(server.running).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(await isPortListening(server.port)).toBe(false);
  }, 120_000);

  it('names the missing binary', async () => {
    await expect(startPrivatePostgres({ binDir: '/nonexistent/pg/bin' })).rejects.toThrow(
      /initdb was not found in \/nonexistent\/pg\/bin/,
    );
  });
});
