import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { startRestartableRedis, type RestartableRedis } from '../support/restartable-redis.js';
import { uniquePrefix, createTestRedis } from '../support/redis.js';
import { pollUntil } from '../support/wait.js';

interface HealthBody {
  status: string;
  details?: Record<string, { status: string; reason?: string }>;
  error?: Record<string, { status: string; reason?: string }>;
}

/**
 * The coordinator's readiness on a throwaway Redis this suite can stop and make read-only:
 * `/health/ready` turns 503 with a reason for each cause (Redis unreachable, persistence not
 * writable) while `/health/live` stays 200, and recovers when the cause goes away. (Shutdown —
 * 503 first, then the grace period — is covered in test/coordinator/docs-health-metrics.)
 */
describe('coordinator /health/ready turns down for each cause', () => {
  let redis: RestartableRedis;
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    redis = await startRestartableRedis();
    coordinator = await CoordinatorProcess.start({
      prefix: uniquePrefix('health'),
      redisUrl: redis.url,
    });
    // details are shown to authenticated callers only (docs/protocol.md §15.1)
    api = new CoordinatorApi(coordinator.url);
  });

  afterAll(async () => {
    await coordinator?.stop();
    await redis?.dispose();
  });

  const ready = (): Promise<{ status: number; body: HealthBody }> =>
    api.get<HealthBody>('/health/ready');

  it('is up with every check up', async () => {
    const res = await ready();
    expect(res.status).toBe(200);
    expect(res.body.details).toEqual({
      coordinator: { status: 'up' },
      redis: { status: 'up' },
      persistence: { status: 'up' },
      keyLayout: { status: 'up' },
      redisData: { status: 'up' },
    });
  });

  it('persistence down (reachable, not writable): Redis refuses writes', async () => {
    const admin = createTestRedis({ url: redis.url, maxRetriesPerRequest: 1 });
    try {
      // With no replica connected, a primary that needs one refuses every write (NOREPLICAS)
      // while PING still answers: exactly "reachable but not writable".
      await admin.config('SET', 'min-replicas-to-write', '1');
      const down = await pollUntil(ready, (r) => r.status === 503, {
        timeoutMs: 10_000,
        message: 'readiness to turn 503',
      });
      expect(down.body.details?.redis).toEqual({ status: 'up' });
      expect(down.body.error?.redis).toBeUndefined();
      expect(down.body.error?.persistence?.status).toBe('down');
      expect(down.body.error?.persistence?.reason).toMatch(/^Redis not writable: .*NOREPLICAS/);
      expect((await api.get('/health/live')).status).toBe(200);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
      admin.disconnect();
    }
    await pollUntil(ready, (r) => r.status === 200, {
      timeoutMs: 10_000,
      message: 'readiness back to 200',
    });
  });

  it('redis and persistence down while Redis is stopped; back up once it returns', async () => {
    await redis.stop();
    const started = Date.now();
    const down = await pollUntil(ready, (r) => r.status === 503, {
      timeoutMs: 15_000,
      message: 'readiness to turn 503',
    });
    // Each probe is bounded (1 s), so the answer never hangs on a dead Redis.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(down.body.status).toBe('error');
    expect(down.body.error?.redis?.status).toBe('down');
    expect(down.body.error?.redis?.reason).toMatch(/^Redis unreachable: /);
    expect(down.body.error?.persistence?.status).toBe('down');
    expect(down.body.details?.coordinator).toEqual({ status: 'up' });
    const live = await api.get<HealthBody>('/health/live');
    expect([live.status, live.body.status]).toEqual([200, 'ok']);

    await redis.restart();
    await pollUntil(ready, (r) => r.status === 200, {
      timeoutMs: 20_000,
      intervalMs: 100,
      message: 'readiness back to 200 after Redis returned',
    });
  });
});
