import { freePort } from './free-port.js';
import { type RedisServerProcess, spawnRedisServer } from './redis-server-process.js';
import { createTempDir } from './temp-dir.js';
import { trackRedisProcess } from './redis-process-tracker.js';

/**
 * A standalone `redis-server` with AOF (`appendfsync always`) in its own temp dir, for fault
 * tests: stop it cleanly, crash it, bring it back on the same port with the same data.
 */
export interface RestartableRedis {
  /** Its port on 127.0.0.1 (the same across restarts). */
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** Its data directory (AOF files). */
  readonly dir: string;
  /** Whether the server is currently up. */
  readonly running: boolean;
  /** Clean shutdown (SIGTERM). */
  stop(): Promise<void>;
  /** Crash (SIGKILL). */
  kill(): Promise<void>;
  /** Starts it again (stopping it first if up) on the same port with the same data dir. */
  restart(): Promise<void>;
  /** Stops it for good and removes its data dir. Idempotent. */
  dispose(): Promise<void>;
}

/** Options of {@link startRestartableRedis}. */
export interface RestartableRedisOptions {
  /** Port; default a free one. */
  port?: number;
  /** Extra `redis-server` arguments. */
  args?: readonly string[];
}

/**
 * Starts a restartable Redis with AOF on a free port. Stop it with `dispose()` in `afterAll`
 * (or {@link stopAllRedisProcesses}); it is also killed at process exit.
 */
export async function startRestartableRedis(
  options: RestartableRedisOptions = {},
): Promise<RestartableRedis> {
  const port = options.port ?? (await freePort());
  const dir = createTempDir('aof');
  const args = [
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    ...(options.args ?? []),
  ];
  const launch = (): Promise<RedisServerProcess> => spawnRedisServer({ port, dir: dir.path, args });
  let server: RedisServerProcess | undefined;
  try {
    server = await launch();
  } catch (error) {
    dir.remove();
    throw error;
  }
  let disposed = false;
  const handle: RestartableRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir: dir.path,
    get running() {
      return server?.running ?? false;
    },
    async stop() {
      await server?.stop();
    },
    async kill() {
      await server?.kill();
    },
    async restart() {
      if (disposed) throw new Error(`restartable Redis on port ${port} was disposed`);
      await server?.stop();
      server = await launch();
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      untrack();
      await server?.stop();
      dir.remove();
    },
  };
  const untrack = trackRedisProcess(handle);
  return handle;
}
