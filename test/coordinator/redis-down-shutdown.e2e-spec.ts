import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorProcess } from '../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import { uniquePrefix } from '../support/redis.js';

/**
 * The coordinator closes its Redis connections with the library's `closeConnection`, which only
 * disconnects a connection that is not ready: a SIGTERM while Redis is down and the connections
 * are reconnecting ends the process at once (the fixture sends SIGKILL after 20 s).
 */
describe('coordinator shutdown while Redis is down', () => {
  let redis: RestartableRedis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  afterEach(async () => {
    await coordinator?.kill();
    coordinator = undefined;
    await redis?.dispose();
    redis = undefined;
  });

  it('exits promptly on SIGTERM', async () => {
    redis = await startRestartableRedis();
    coordinator = await CoordinatorProcess.start({
      prefix: uniquePrefix('redis-down-shutdown'),
      redisUrl: redis.url,
    });
    await redis.stop();

    const started = performance.now();
    await coordinator.stop('SIGTERM', 20_000);
    const took = performance.now() - started;
    expect(took).toBeLessThan(5_000);
  });
});
