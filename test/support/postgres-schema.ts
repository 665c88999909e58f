import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  resolvePostgres,
  type ResolvedPostgres,
  type ResolvePostgresOptions,
} from './postgres-resolve.js';

/** A schema of its own for one test, on the resolved PostgreSQL. */
export interface TestSchema {
  /** The schema's name (`rsc_<label>_<random>`). */
  readonly schema: string;
  /** Connection URL whose `search_path` is the schema (for child processes). */
  readonly url: string;
  /** The server's URL without the search path. */
  readonly serverUrl: string;
  /** A pool on the schema, ended by `drop()`. */
  readonly pool: pg.Pool;
  /** Drops the schema (cascade), ends the pool, stops a started server. Idempotent. */
  drop(): Promise<void>;
}

/** Creates a unique schema for a test; `drop()` it in `afterAll`. */
export async function createTestSchema(
  label: string,
  resolve: ResolvePostgresOptions = {},
): Promise<TestSchema> {
  const server: ResolvedPostgres = await resolvePostgres(resolve);
  const schema = `rsc_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"`);
  } finally {
    await admin.end();
  }
  const url = withSearchPath(server.url, schema);
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  let dropped: Promise<void> | undefined;
  return {
    schema,
    url,
    serverUrl: server.url,
    pool,
    drop: () =>
      (dropped ??= (async () => {
        await pool.end().catch(() => undefined);
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        try {
          await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await client.end();
        }
        await server.stop();
      })()),
  };
}

/** `url` with `options=-c search_path=<schema>` (libpq and node-postgres both read it). */
export function withSearchPath(url: string, schema: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  return parsed.toString();
}
