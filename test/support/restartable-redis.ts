import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
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
  /**
   * Copies what is persisted now (the AOF directory; with `appendfsync always` every write
   * answered so far) and returns the copy's path, for {@link RestartableRedis.crashToSnapshot}.
   */
  snapshot(): string;
  /**
   * Crashes the server (SIGKILL) and brings it back from `snapshot`: every write after the
   * snapshot is lost, as after a crash with AOF `everysec` or a restart from an older RDB.
   * `inspect` runs first against the restored data on another port, with no other client able to
   * write (to read what survived); its result is returned once the server is back on its port.
   */
  crashToSnapshot<T>(snapshot: string, inspect: (url: string) => Promise<T>): Promise<T>;
  /** Stops it for good and removes its data dir. Idempotent. */
  dispose(): Promise<void>;
}

/** Where `redis-server` keeps its AOF files (the default `appenddirname`). */
const AOF_DIR = 'appendonlydir';

/** Options of {@link startRestartableRedis}. */
export interface RestartableRedisOptions {
  /** Port; default a free one. */
  port?: number;
  /** Extra `redis-server` arguments. */
  args?: readonly string[];
  /** Extra environment of the server (`RedisClockShim.env`, say), at every start. */
  env?: Readonly<Record<string, string>>;
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
    // a rewrite would replace the files a snapshot copies
    '--auto-aof-rewrite-percentage',
    '0',
    ...(options.args ?? []),
  ];
  const env = options.env;
  const launch = (): Promise<RedisServerProcess> =>
    spawnRedisServer({ port, dir: dir.path, args, ...(env ? { env } : {}) });
  let server: RedisServerProcess | undefined;
  try {
    server = await launch();
  } catch (error) {
    dir.remove();
    throw error;
  }
  let disposed = false;
  let snapshots = 0;
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
    snapshot() {
      const copy = join(dir.path, `snapshot-${++snapshots}`);
      cpSync(join(dir.path, AOF_DIR), copy, { recursive: true });
      return copy;
    },
    async crashToSnapshot<T>(snapshot: string, inspect: (url: string) => Promise<T>) {
      if (disposed) throw new Error(`restartable Redis on port ${port} was disposed`);
      await server?.kill();
      rmSync(join(dir.path, AOF_DIR), { recursive: true, force: true });
      cpSync(snapshot, join(dir.path, AOF_DIR), { recursive: true });
      rmSync(snapshot, { recursive: true, force: true });
      const probe = await spawnRedisServer({
        port: await freePort(),
        dir: dir.path,
        args,
        ...(env ? { env } : {}),
      });
      let result: T;
      try {
        result = await inspect(probe.url);
      } finally {
        await probe.stop();
      }
      server = await launch();
      return result;
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
