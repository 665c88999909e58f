import { execFile } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findExecutable } from '../find-executable.js';
import { freePort } from '../free-port.js';
import { trackRedisProcess } from '../redis-process-tracker.js';
import { type RedisServerProcess, spawnRedisServer } from '../redis-server-process.js';
import { createTempDir } from '../temp-dir.js';
import { ClockShimBuildError } from './clock-shim-build.error.js';

const SHIM_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'clock-offset-shim.c');

/** A `redis-server` whose wall clock a test steps while it runs; its monotonic clock is untouched. */
export interface SteppableClockRedis {
  readonly port: number;
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  /** How far its wall clock is set from the machine's, in ms (0 at start). */
  readonly offsetMs: number;
  /** Sets its wall clock `ms` from the machine's (negative: behind); takes effect at once. */
  setOffset(ms: number): void;
  /** Stops it and removes its files. Idempotent. */
  dispose(): Promise<void>;
}

/**
 * Starts a throwaway `redis-server` (no persistence) on a free port with
 * `clock-offset-shim.c` preloaded (built here with the system C compiler): `TIME`, Lua's
 * `redis.call('TIME')` and everything else Redis reads off the wall clock follow
 * {@link SteppableClockRedis.setOffset}.
 *
 * @throws ClockShimBuildError when there is no C compiler or the shim does not build.
 */
export async function startSteppableClockRedis(): Promise<SteppableClockRedis> {
  const dir = createTempDir('clock');
  let server: RedisServerProcess;
  let offsetFd: number;
  try {
    const shim = await buildShim(dir.path);
    const offsetFile = join(dir.path, 'offset');
    offsetFd = openSync(offsetFile, 'w+');
    writeSync(offsetFd, Buffer.alloc(8), 0, 8, 0);
    server = await spawnRedisServer({
      port: await freePort(),
      dir: dir.path,
      args: ['--save', '', '--appendonly', 'no'],
      env: { LD_PRELOAD: shim, RSC_TEST_CLOCK_OFFSET_FILE: offsetFile },
    });
  } catch (error) {
    dir.remove();
    throw error;
  }
  let offsetMs = 0;
  let disposed = false;
  const handle: SteppableClockRedis = {
    port: server.port,
    url: server.url,
    get offsetMs() {
      return offsetMs;
    },
    setOffset(ms: number) {
      if (!Number.isSafeInteger(ms)) throw new RangeError(`offset must be an integer of ms: ${ms}`);
      const bytes = Buffer.alloc(8);
      bytes.writeBigInt64LE(BigInt(ms));
      writeSync(offsetFd, bytes, 0, 8, 0);
      offsetMs = ms;
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      untrack();
      await server.stop();
      closeSync(offsetFd);
      dir.remove();
    },
  };
  const untrack = trackRedisProcess(handle);
  return handle;
}

async function buildShim(dir: string): Promise<string> {
  const compiler = findExecutable('cc') ?? findExecutable('gcc');
  if (compiler === undefined) {
    throw new ClockShimBuildError(
      'a Redis with a steppable clock needs a C compiler (cc or gcc on PATH) to build its LD_PRELOAD shim; on Debian: apt-get install gcc',
    );
  }
  const out = join(dir, 'clock-offset-shim.so');
  try {
    await promisify(execFile)(compiler, ['-shared', '-fPIC', '-O2', '-o', out, SHIM_SOURCE], {
      timeout: 60_000,
    });
  } catch (error) {
    throw new ClockShimBuildError(`${compiler} could not build ${SHIM_SOURCE}`, { cause: error });
  }
  return out;
}
