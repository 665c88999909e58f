import { execFile, execFileSync, spawn } from 'node:child_process';
import { chownSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findExecutable } from './find-executable.js';
import { freePort } from './free-port.js';
import { onProcessExit } from './process-cleanup.js';
import { probePostgres } from './postgres-resolve.js';
import { PostgresServerStartError } from './postgres-server-start.error.js';
import { createTempDir } from './temp-dir.js';
import { waitFor, WaitTimeoutError } from './wait.js';
import { killQuietly, readPid, settlesWithin } from './watched-server.js';

const run = promisify(execFile);

/** Where Debian and Ubuntu install PostgreSQL 15's server binaries. */
export const DEFAULT_POSTGRES_BIN_DIR = '/usr/lib/postgresql/15/bin';

/** How a stop ends the server (`pg_ctl stop -m`). */
export type PostgresStopMode = 'fast' | 'immediate';

/** Options of {@link startPrivatePostgres}. */
export interface PrivatePostgresOptions {
  /** Directory of `initdb` and `postgres`; default `PG_BIN_DIR`, else {@link DEFAULT_POSTGRES_BIN_DIR}. */
  binDir?: string;
  /** TCP port on 127.0.0.1 (the same across restarts); default a free one. */
  port?: number;
  /** How long `initdb` and each start may take before it counts as failed; default 60 s. */
  readyTimeoutMs?: number;
}

/**
 * A PostgreSQL cluster of its own (`initdb` in a temp dir, trust auth, `fsync=off`), for tests
 * that stop and start the server, which the shared one on 5432 does not allow.
 */
export interface PrivatePostgres {
  /** Its port on 127.0.0.1 (the same across restarts). */
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  /** The cluster's data directory. */
  readonly dataDir: string;
  /** Whether the server is up. */
  readonly running: boolean;
  /**
   * Stops the server: `fast` (SIGINT: open transactions rolled back, clean shutdown) or
   * `immediate` (SIGQUIT: every backend ends at once, crash recovery at the next start).
   * Resolves when the postmaster has exited (SIGKILL after `timeoutMs`, default 30 s).
   */
  stop(mode: PostgresStopMode, timeoutMs?: number): Promise<void>;
  /** Starts it again on the same port and data dir; resolves once it answers `SELECT 1`. */
  start(): Promise<void>;
  /** Stops it for good (immediate) and removes its directory. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Runs the postmaster (the `$0` of this script) in the background and prints its pid. A watchdog
 * holds this process's stdin pipe: when the pipe closes (the test process ended, even by
 * SIGKILL) it sends SIGQUIT (immediate shutdown), so no server outlives the run.
 */
const WATCHDOG_SCRIPT = [
  'exec 3<&0',
  '"$0" "$@" </dev/null &',
  'pid=$!',
  'echo "$pid"',
  '( read -r _ <&3; kill -QUIT "$pid" 2>/dev/null ) >/dev/null 2>&1 &',
  'wait "$pid"',
].join('\n');

const RUN_AS = 'postgres';

/**
 * Creates a cluster with `initdb` in a fresh temp dir and starts it on a free port. As root (the
 * server refuses to run as root) the binaries run as the `postgres` user through `runuser`, in a
 * directory that user owns. `dispose()` it in `afterAll`; it is also stopped at process exit.
 *
 * @throws PostgresServerStartError naming a missing binary or user, or with the server's log
 *   when `initdb` or the start fails or the server does not answer within `readyTimeoutMs`.
 */
export async function startPrivatePostgres(
  options: PrivatePostgresOptions = {},
): Promise<PrivatePostgres> {
  const binDir = options.binDir ?? (process.env.PG_BIN_DIR || DEFAULT_POSTGRES_BIN_DIR);
  const readyTimeoutMs = options.readyTimeoutMs ?? 60_000;
  const initdb = requireBinary(binDir, 'initdb');
  const postgres = requireBinary(binDir, 'postgres');
  const asUser = runAsPrefix();
  const port = options.port ?? (await freePort());
  const dir = createTempDir('pg');
  const dataDir = join(dir.path, 'data');
  try {
    if (asUser.length > 0) {
      const { uid, gid } = userIds(RUN_AS);
      chownSync(dir.path, uid, gid);
    } else {
      mkdirSync(dataDir, { mode: 0o700 });
    }
    const [cmd, ...prefix] = [...asUser, initdb];
    await run(
      cmd!,
      [
        ...prefix,
        '-D',
        dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '--no-sync',
        '-E',
        'UTF8',
        '--locale=C',
      ],
      { timeout: readyTimeoutMs },
    );
  } catch (error) {
    dir.remove();
    throw new PostgresServerStartError(
      `initdb in ${dataDir} failed: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }

  const args = [
    '-D',
    dataDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${dir.path}`,
    // tests only: the OS page cache survives a server crash, so commits still survive a stop
    '-c',
    'fsync=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=100',
  ];
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let server: PostmasterProcess | undefined;
  const launch = async (): Promise<void> => {
    server = await spawnPostmaster(asUser, postgres, args, port, url, readyTimeoutMs);
  };
  try {
    await launch();
  } catch (error) {
    dir.remove();
    throw error;
  }
  let disposed = false;
  return {
    port,
    url,
    dataDir,
    get running() {
      return server?.running ?? false;
    },
    async stop(mode, timeoutMs = 30_000) {
      await server?.stop(mode === 'fast' ? 'SIGINT' : 'SIGQUIT', timeoutMs);
    },
    async start() {
      if (disposed) throw new Error(`private PostgreSQL on port ${port} was disposed`);
      if (server?.running) return;
      await launch();
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await server?.stop('SIGQUIT', 10_000);
      dir.remove();
    },
  };
}

interface PostmasterProcess {
  readonly running: boolean;
  stop(signal: 'SIGINT' | 'SIGQUIT', timeoutMs: number): Promise<void>;
}

async function spawnPostmaster(
  asUser: readonly string[],
  postgres: string,
  args: readonly string[],
  port: number,
  url: string,
  readyTimeoutMs: number,
): Promise<PostmasterProcess> {
  const [cmd, ...prefix] = [...asUser, 'sh'];
  const child = spawn(cmd!, [...prefix, '-c', WATCHDOG_SCRIPT, postgres, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin?.on('error', () => undefined); // EPIPE once the watchdog is gone
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  let running = true;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running = false;
      child.stdin?.end(); // releases the watchdog
      resolve();
    });
  });
  const failure = (what: string): PostgresServerStartError =>
    new PostgresServerStartError(`postgres on port ${port} ${what}\n${log}`.trimEnd());
  const pid = await readPid(child, exited);
  if (pid === undefined) throw failure('exited before it started');
  const unregister = onProcessExit(() => killQuietly(pid, 'SIGQUIT'));
  void exited.then(unregister);
  const postmaster: PostmasterProcess = {
    get running() {
      return running;
    },
    async stop(signal, timeoutMs) {
      if (!running) return;
      killQuietly(pid, signal);
      if (await settlesWithin(exited, timeoutMs)) return;
      killQuietly(pid, 'SIGKILL');
      await exited;
    },
  };
  try {
    await waitFor(
      async () => {
        if (!running) throw failure('exited before it answered');
        return (await probePostgres(url, 1000)) === undefined;
      },
      { timeoutMs: readyTimeoutMs, intervalMs: 50, message: `postgres on port ${port} to answer` },
    );
  } catch (error) {
    await postmaster.stop('SIGQUIT', 5000);
    if (!(error instanceof WaitTimeoutError)) throw error;
    throw failure(`did not answer SELECT 1 within ${readyTimeoutMs} ms`);
  }
  return postmaster;
}

function requireBinary(binDir: string, name: string): string {
  const binary = findExecutable(join(binDir, name));
  if (binary === undefined) {
    throw new PostgresServerStartError(
      `${name} was not found in ${binDir}: a private PostgreSQL cluster needs PostgreSQL 15's ` +
        `server binaries (apt-get install postgresql-15), or PG_BIN_DIR naming where they are`,
    );
  }
  return binary;
}

/** `runuser -u postgres --` when running as root (the server refuses root), else nothing. */
function runAsPrefix(): string[] {
  if (process.getuid?.() !== 0) return [];
  const runuser = findExecutable('runuser');
  if (runuser === undefined) {
    throw new PostgresServerStartError(
      `running as root, PostgreSQL must run as the ${RUN_AS} user, but runuser was not found on PATH`,
    );
  }
  return [runuser, '-u', RUN_AS, '--'];
}

function userIds(user: string): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', user], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', user], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch (error) {
    throw new PostgresServerStartError(
      `running as root, PostgreSQL must run as the ${user} user, which does not exist ` +
        `(it comes with apt-get install postgresql-15)`,
      { cause: error },
    );
  }
}
