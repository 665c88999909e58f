import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { findExecutable } from './find-executable.js';
import { onProcessExit } from './process-cleanup.js';
import { RedisServerStartError } from './redis-server-start.error.js';
import { probeRedis } from './redis-probe.js';
import { waitFor, WaitTimeoutError } from './wait.js';
import { killQuietly, readPid, settlesWithin } from './watched-server.js';

/** Options of {@link spawnRedisServer}. */
export interface RedisServerOptions {
  /** TCP port on 127.0.0.1. */
  port: number;
  /** Working directory (log file, AOF, `nodes.conf`); the caller creates and removes it. */
  dir: string;
  /** Extra `redis-server` arguments, e.g. `['--appendonly', 'yes']`. */
  args?: readonly string[];
  /** The binary; default `redis-server` from `PATH`. */
  binary?: string;
  /** How long to wait for the first PONG; default 10 s. */
  readyTimeoutMs?: number;
  /**
   * Where the readiness PING goes (credentials when the default user is off); default
   * `redis://127.0.0.1:<port>`.
   */
  probeUrl?: string;
  /** Extra environment of the server process (`LD_PRELOAD`, say); merged over this process's. */
  env?: Readonly<Record<string, string>>;
}

/** A running `redis-server` child process. */
export interface RedisServerProcess {
  /** Its TCP port on 127.0.0.1. */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** The pid of `redis-server` itself. */
  readonly pid: number;
  /** Whether it has not exited yet. */
  readonly running: boolean;
  /** Resolves when it has exited. */
  readonly exited: Promise<void>;
  /** SIGTERM (clean shutdown, AOF flushed), then SIGKILL if it is still up after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
  /** SIGKILL: a crash, nothing flushed beyond what is already on disk. */
  kill(): Promise<void>;
}

/**
 * Runs `redis-server` (the `$0` of this script) in the background and prints its pid. A
 * watchdog holds this process's stdin pipe: when the pipe closes (the test process ended, even
 * by SIGKILL) it SIGKILLs Redis, so no server outlives the run.
 */
const WATCHDOG_SCRIPT = [
  'exec 3<&0',
  '"$0" "$@" </dev/null &',
  'pid=$!',
  'echo "$pid"',
  '( read -r _ <&3; kill -9 "$pid" 2>/dev/null ) >/dev/null 2>&1 &',
  'wait "$pid"',
].join('\n');

/**
 * Starts `redis-server` on `127.0.0.1:<port>` in `dir` and resolves once it answers PING. The
 * process is also killed at exit of the current process (and on SIGINT/SIGTERM) if still up.
 *
 * @throws RedisServerStartError when the binary is missing, it exits early (the message carries
 *   the tail of its log) or it does not answer within `readyTimeoutMs`.
 */
export async function spawnRedisServer(options: RedisServerOptions): Promise<RedisServerProcess> {
  const binaryName = options.binary ?? 'redis-server';
  const binary = findExecutable(binaryName);
  if (!binary) throw new RedisServerStartError(`${binaryName} was not found on PATH`);
  const logFile = join(options.dir, 'redis.log');
  const args = [
    '--port',
    String(options.port),
    '--bind',
    '127.0.0.1',
    '--dir',
    options.dir,
    '--logfile',
    logFile,
    '--daemonize',
    'no',
    ...(options.args ?? []),
  ];
  const child = spawn('sh', ['-c', WATCHDOG_SCRIPT, binary, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
  });
  child.stdin?.on('error', () => undefined); // EPIPE once the watchdog is gone
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let running = true;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      running = false;
      child.stdin?.end(); // releases the watchdog
      resolve();
    });
  });
  const failure = (what: string): RedisServerStartError =>
    new RedisServerStartError(
      `redis-server on port ${options.port} ${what}\n${tail(logFile)}${stderr}`.trimEnd(),
    );

  const pid = await readPid(child, exited);
  if (pid === undefined) throw failure('exited before it started');
  // The wrapper shell exits by itself once Redis is gone (`wait` returns).
  const unregister = onProcessExit(() => killQuietly(pid, 'SIGKILL'));
  void exited.then(unregister);

  const server: RedisServerProcess = {
    port: options.port,
    url: `redis://127.0.0.1:${options.port}`,
    pid,
    get running() {
      return running;
    },
    exited,
    async stop(timeoutMs = 10_000) {
      if (!running) return;
      killQuietly(pid, 'SIGTERM');
      if (await settlesWithin(exited, timeoutMs)) return;
      killQuietly(pid, 'SIGKILL');
      await exited;
    },
    async kill() {
      if (!running) return;
      killQuietly(pid, 'SIGKILL');
      await exited;
    },
  };

  const readyTimeoutMs = options.readyTimeoutMs ?? 10_000;
  const answers = async (): Promise<boolean> => {
    if (!running) throw failure('exited before it answered PING');
    return (await probeRedis(options.probeUrl ?? server.url, 1000)).ok;
  };
  try {
    await waitFor(answers, {
      timeoutMs: readyTimeoutMs,
      intervalMs: 25,
      message: `redis-server on port ${options.port} to answer PING`,
    });
  } catch (error) {
    if (!(error instanceof WaitTimeoutError)) throw error;
    await server.kill();
    throw failure(`did not answer PING within ${readyTimeoutMs} ms`);
  }
  return server;
}

function tail(file: string): string {
  try {
    return `${readFileSync(file, 'utf8').split('\n').slice(-15).join('\n')}\n`;
  } catch {
    return '';
  }
}
