import { describe, expect, it } from 'vitest';
import { childVitestEnv, runNode, VITEST_CLI } from '../support/child-run.js';
import { freePort, isPortListening } from '../support/free-port.js';
import {
  RedisUnavailableError,
  redisUrl,
  resolveRedis,
  createTestRedis,
} from '../support/redis.js';

/** A URL on 127.0.0.1 where nothing listens. */
async function closedUrl(): Promise<string> {
  return `redis://127.0.0.1:${await freePort()}`;
}

async function timed<T>(
  fn: () => Promise<T>,
): Promise<{ ms: number; result: PromiseSettledResult<T> }> {
  const start = Date.now();
  const [result] = await Promise.allSettled([fn()]);
  return { ms: Date.now() - start, result: result as PromiseSettledResult<T> };
}

function rejection(result: PromiseSettledResult<unknown>): unknown {
  if (result.status === 'fulfilled') throw new Error('expected the resolution to fail');
  return result.reason;
}

describe('Redis resolution when Redis is unreachable', () => {
  it('REDIS_URL on a closed port fails fast with the clear message, without falling back', async () => {
    const url = await closedUrl();
    const { ms, result } = await timed(() => resolveRedis({ env: { REDIS_URL: url } }));
    const error = rejection(result);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain(`REDIS_URL=${url} is set but no Redis answered there`);
    expect(message).toContain('ECONNREFUSED');
    expect(message).toContain('without fallbacks');
    expect(message).toContain('How to get Redis for the tests');
    expect(ms).toBeLessThan(3000);
  });

  it('REDIS_URL on a black-holed host fails within the probe bound', async () => {
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never routed, so a connect either hangs or fails.
    const { ms, result } = await timed(() =>
      resolveRedis({ env: { REDIS_URL: 'redis://192.0.2.1:6379' }, probeTimeoutMs: 1000 }),
    );
    expect((rejection(result) as Error).message).toContain('REDIS_URL=redis://192.0.2.1:6379');
    expect(ms).toBeLessThan(3000);
  });

  it('a password in REDIS_URL is not printed', async () => {
    const port = await freePort();
    const { result } = await timed(() =>
      resolveRedis({ env: { REDIS_URL: `redis://user:s3cret@127.0.0.1:${port}` } }),
    );
    const message = (rejection(result) as Error).message;
    expect(message).toContain(`redis://user:***@127.0.0.1:${port}`);
    expect(message).not.toContain('s3cret');
  });

  it('with nothing available it fails with one message listing what was tried', async () => {
    const local = await closedUrl();
    const { ms, result } = await timed(() =>
      resolveRedis({
        env: {},
        localUrl: local,
        docker: false,
        redisServer: '/nonexistent/redis-server',
      }),
    );
    const error = rejection(result);
    expect(error).toBeInstanceOf(RedisUnavailableError);
    const message = (error as Error).message;
    expect(message).toContain('none found');
    expect(message).toContain('REDIS_URL: not set');
    expect(message).toContain(`${local}: `);
    expect(message).toContain('/nonexistent/redis-server was not found on PATH');
    expect(message).toMatch(/set REDIS_URL=.*redis-server.*Docker/);
    expect(ms).toBeLessThan(3000);
  });

  it('uses an already running server at the local URL', async () => {
    const resolved = await resolveRedis({ env: {}, localUrl: redisUrl(), docker: false });
    expect(resolved).toMatchObject({ url: redisUrl(), source: 'local' });
    await resolved.stop(); // a no-op: it did not start that server
    expect(await isPortListening(Number(new URL(redisUrl()).port || 6379))).toBe(true);
  });

  it('spawns redis-server on a free port when nothing else is there, and stops it', async () => {
    const resolved = await resolveRedis({ env: {}, localUrl: await closedUrl(), docker: false });
    expect(resolved.source).toBe('redis-server');
    const port = Number(new URL(resolved.url).port);
    const client = createTestRedis({ url: resolved.url, maxRetriesPerRequest: 1 });
    try {
      await client.set('spawned:probe', 'yes');
      expect(await client.get('spawned:probe')).toBe('yes');
      const persistence = (await client.call('CONFIG', 'GET', 'appendonly')) as string[];
      expect(persistence).toEqual(['appendonly', 'no']);
    } finally {
      client.disconnect();
    }
    await resolved.stop();
    expect(await isPortListening(port)).toBe(false);
  });

  it('a vitest run with REDIS_URL on a closed port exits non-zero with the message', async () => {
    const url = await closedUrl();
    const start = Date.now();
    const { code, output } = await runNode(
      [VITEST_CLI, 'run', 'test/workspace/redis-smoke.e2e-spec.ts'],
      {
        env: childVitestEnv({ REDIS_URL: url, NO_COLOR: '1' }),
        cwd: process.cwd(),
        timeoutMs: 55_000,
      },
    );
    expect(code).not.toBe(0);
    expect(output).toContain(`REDIS_URL=${url} is set but no Redis answered there`);
    expect(Date.now() - start).toBeLessThan(30_000);
  }, 60_000);
});
