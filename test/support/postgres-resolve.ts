import pg from 'pg';
import { PostgresUnavailableError } from './postgres-unavailable.error.js';

/** Where the test PostgreSQL came from. */
export type PostgresSource = 'env' | 'local' | 'testcontainers';

/** The PostgreSQL the tests use, and how to release it. */
export interface ResolvedPostgres {
  readonly url: string;
  readonly source: PostgresSource;
  /** Stops what the resolution started (a no-op for `env` and `local`). Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link resolvePostgres}; the defaults are the real resolution order. */
export interface ResolvePostgresOptions {
  /** Environment to read `DATABASE_URL` / `PG_URL` from; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The "already running" server to try second; `false` skips it. */
  localUrl?: string | false;
  /** Bound on each probe; default 2000 ms. */
  probeTimeoutMs?: number;
  /** Try Docker through testcontainers third (default true). */
  docker?: boolean;
}

/** The default "already running" PostgreSQL (trust auth, database `test`). */
export const LOCAL_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';

const HOW_TO_GET_POSTGRES =
  'How to get PostgreSQL for the tests: set DATABASE_URL (or PG_URL) to postgres://user@host:port/db ' +
  'of a running server; or start one on 127.0.0.1:5432 with user postgres and database test ' +
  '(apt-get install postgresql, or docker run -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust ' +
  '-e POSTGRES_DB=test postgres:15-alpine); or install and start Docker (the tests then run ' +
  'postgres:15-alpine through testcontainers).';

/**
 * Finds or starts the PostgreSQL the tests use: `DATABASE_URL`, then `PG_URL` (used alone when
 * set), a server answering at `localUrl`, a container through testcontainers.
 *
 * @throws PostgresUnavailableError saying what was tried and how to get PostgreSQL.
 */
export async function resolvePostgres(
  options: ResolvePostgresOptions = {},
): Promise<ResolvedPostgres> {
  const env = options.env ?? process.env;
  const timeoutMs = options.probeTimeoutMs ?? 2000;
  const noop = async (): Promise<void> => undefined;
  const fromEnv = env.DATABASE_URL || env.PG_URL;
  if (fromEnv) {
    const failure = await probePostgres(fromEnv, timeoutMs);
    if (failure === undefined) return { url: fromEnv, source: 'env', stop: noop };
    throw new PostgresUnavailableError(
      `PostgreSQL: DATABASE_URL/PG_URL=${redact(fromEnv)} is set but did not answer (${failure}). ` +
        `It is used alone when set: fix it or unset it. ${HOW_TO_GET_POSTGRES}`,
    );
  }
  const tried = ['DATABASE_URL/PG_URL: not set'];
  const localUrl = options.localUrl ?? LOCAL_POSTGRES_URL;
  if (localUrl !== false) {
    const failure = await probePostgres(localUrl, timeoutMs);
    if (failure === undefined) return { url: localUrl, source: 'local', stop: noop };
    tried.push(`${localUrl}: ${failure}`);
  }
  if (options.docker !== false) {
    const container = await startPostgresContainer();
    if (typeof container !== 'string') return container;
    tried.push(`Docker via testcontainers: ${container}`);
  }
  throw new PostgresUnavailableError(
    `PostgreSQL for the tests: none found. Tried ${tried.join('; ')}. ${HOW_TO_GET_POSTGRES}`,
  );
}

/** Undefined when a `SELECT 1` answers at `url` within `timeoutMs`, else why not. */
export async function probePostgres(url: string, timeoutMs: number): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function startPostgresContainer(): Promise<ResolvedPostgres | string> {
  let testcontainers: typeof import('testcontainers');
  try {
    testcontainers = await import('testcontainers');
  } catch (error) {
    return `testcontainers is not installed (${String(error)})`;
  }
  try {
    await Promise.race([
      testcontainers.getContainerRuntimeClient(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('5 s')), 5000).unref()),
    ]);
  } catch (error) {
    return `no container runtime (${error instanceof Error ? error.message : String(error)})`;
  }
  try {
    const container = await new testcontainers.GenericContainer('postgres:15-alpine')
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust', POSTGRES_DB: 'test' })
      .withExposedPorts(5432)
      .withWaitStrategy(testcontainers.Wait.forLogMessage(/ready to accept connections/, 2))
      .withStartupTimeout(180_000)
      .start();
    const url = `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/test`;
    let stopped: Promise<void> | undefined;
    return {
      url,
      source: 'testcontainers',
      stop: () => (stopped ??= container.stop().then(() => undefined)),
    };
  } catch (error) {
    return `postgres:15-alpine did not start (${error instanceof Error ? error.message : String(error)})`;
  }
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
