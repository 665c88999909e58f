import { resolveRedis, type ResolvedRedis } from '../../test/support/redis-resolve.js';

/**
 * The one Redis every scenario of a run uses. `BENCH_REDIS_URL` if set; otherwise a dedicated
 * `redis-server` spawned on a free port (no persistence), so INFO commandstats and CPU count the
 * benchmark alone even when other processes use the machine's Redis; otherwise the usual test
 * resolution (`REDIS_URL`, `127.0.0.1:6379`, Docker).
 */
export async function benchRedis(log: (line: string) => void): Promise<ResolvedRedis> {
  const explicit = process.env.BENCH_REDIS_URL;
  if (explicit) return resolveRedis({ env: { REDIS_URL: explicit }, log });
  try {
    return await resolveRedis({ env: {}, localUrl: false, docker: false, log });
  } catch {
    log(
      'no redis-server on PATH: falling back to the test Redis (its counters may include other clients)',
    );
    return resolveRedis({ log });
  }
}
