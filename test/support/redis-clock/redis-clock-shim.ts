import { execFile } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findExecutable } from '../find-executable.js';
import { createTempDir } from '../temp-dir.js';
import { ClockShimBuildError } from './clock-shim-build.error.js';

const SHIM_SOURCE = join(dirname(fileURLToPath(import.meta.url)), 'clock-offset-shim.c');

/**
 * `clock-offset-shim.c`, built, and the offset it reads: a `redis-server` started with
 * {@link RedisClockShim.env} reads its wall clock `offsetMs` from the machine's (`TIME`, Lua's
 * `redis.call('TIME')`, key expiry, stream ids), its monotonic clock untouched. The offset
 * survives restarts of that server.
 */
export interface RedisClockShim {
  /** The environment a `redis-server` needs to run with the shim. */
  readonly env: Readonly<Record<string, string>>;
  /** How far the wall clock is set from the machine's, in ms (0 at start). */
  readonly offsetMs: number;
  /** Sets the wall clock `ms` from the machine's (negative: behind); takes effect at once. */
  setOffset(ms: number): void;
  /** Removes the shim and its offset file (stop the servers using it first). Idempotent. */
  remove(): void;
}

/**
 * Builds the shim with the system C compiler into a temp dir, with an offset of 0.
 *
 * @throws ClockShimBuildError when there is no C compiler or the shim does not build.
 */
export async function buildRedisClockShim(): Promise<RedisClockShim> {
  const dir = createTempDir('clock');
  let fd: number;
  let shim: string;
  const offsetFile = join(dir.path, 'offset');
  try {
    shim = await compile(dir.path);
    fd = openSync(offsetFile, 'w+');
    writeSync(fd, Buffer.alloc(8), 0, 8, 0);
  } catch (error) {
    dir.remove();
    throw error;
  }
  let offsetMs = 0;
  let removed = false;
  return {
    env: { LD_PRELOAD: shim, RSC_TEST_CLOCK_OFFSET_FILE: offsetFile },
    get offsetMs() {
      return offsetMs;
    },
    setOffset(ms: number) {
      if (removed) throw new Error('the Redis clock shim was removed');
      if (!Number.isSafeInteger(ms)) throw new RangeError(`offset must be an integer of ms: ${ms}`);
      const bytes = Buffer.alloc(8);
      bytes.writeBigInt64LE(BigInt(ms));
      writeSync(fd, bytes, 0, 8, 0);
      offsetMs = ms;
    },
    remove() {
      if (removed) return;
      removed = true;
      closeSync(fd);
      dir.remove();
    },
  };
}

async function compile(dir: string): Promise<string> {
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
