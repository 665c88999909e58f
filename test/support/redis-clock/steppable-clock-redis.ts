import { freePort } from '../free-port.js';
import { trackRedisProcess } from '../redis-process-tracker.js';
import { type RedisServerProcess, spawnRedisServer } from '../redis-server-process.js';
import { createTempDir } from '../temp-dir.js';
import { buildRedisClockShim } from './redis-clock-shim.js';

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
 * Starts a throwaway `redis-server` (no persistence) on a free port with the clock shim
 * (`redis-clock-shim.ts`) preloaded.
 *
 * @throws ClockShimBuildError when there is no C compiler or the shim does not build.
 */
export async function startSteppableClockRedis(): Promise<SteppableClockRedis> {
  const shim = await buildRedisClockShim();
  const dir = createTempDir('clock-redis');
  let server: RedisServerProcess;
  try {
    server = await spawnRedisServer({
      port: await freePort(),
      dir: dir.path,
      args: ['--save', '', '--appendonly', 'no'],
      env: shim.env,
    });
  } catch (error) {
    dir.remove();
    shim.remove();
    throw error;
  }
  let disposed = false;
  const handle: SteppableClockRedis = {
    port: server.port,
    url: server.url,
    get offsetMs() {
      return shim.offsetMs;
    },
    setOffset: (ms) => shim.setOffset(ms),
    async dispose() {
      if (disposed) return;
      disposed = true;
      untrack();
      await server.stop();
      shim.remove();
      dir.remove();
    },
  };
  const untrack = trackRedisProcess(handle);
  return handle;
}
