import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import {
  COORDINATOR_MAIN,
  CoordinatorApi,
  CoordinatorProcess,
} from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { onProcessExit } from '../support/process-cleanup.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import { uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { waitFor, waitForNoProblems } from '../support/wait.js';

/**
 * A coordinator started while Redis does not answer (a Redis restarting beside it, a pod that
 * comes up first) waits for Redis instead of exiting, for up to `REDIS_STARTUP_TIMEOUT_MS`; after
 * that it exits 1 with a message saying what to check. The proxy in front of Redis counts the
 * coordinator's connection attempts, so the test knows the coordinator kept trying.
 */
describe('Redis down while the coordinator starts', () => {
  let redis: RestartableRedis | undefined;
  let proxy: TcpProxy | undefined;
  let coordinator: CoordinatorProcess | undefined;
  afterEach(async () => {
    await coordinator?.stop();
    coordinator = undefined;
    await proxy?.close();
    proxy = undefined;
    await redis?.dispose();
    redis = undefined;
  });

  it('waits for Redis, then starts and declares its streams', async () => {
    redis = await startRestartableRedis();
    await redis.stop();
    proxy = await startTcpProxy(redis.port);
    const starting = CoordinatorProcess.start({
      prefix: uniquePrefix('redis-down-start'),
      redisUrl: proxy.url,
      readyTimeoutMs: 60_000,
      env: { STREAMS: 'orders:2', REDIS_STARTUP_TIMEOUT_MS: '60000' },
    });
    // Without the wait, the first failed read (one reconnect attempt) stops the process, and
    // `starting` rejects with its output before this many attempts were made.
    const attempts = proxy;
    await Promise.race([
      waitForNoProblems(
        () => (attempts.accepted >= 10 ? [] : [`${attempts.accepted} connection attempts`]),
        { timeoutMs: 30_000, message: 'the coordinator to keep connecting while Redis was down' },
      ),
      starting.then(() => {
        throw new Error('the coordinator was ready while Redis was down');
      }),
    ]);
    await redis.restart();
    coordinator = await starting;
    const res = await new CoordinatorApi(coordinator.url).request('GET', '/v1/streams/orders');
    expect(res.status).toBe(200);
  });

  it('ends at once on SIGTERM while it waits for Redis', async () => {
    // Nest 12 runs the shutdown hooks of an application whose init has not finished (its
    // NestApplication.init leaves no initialization promise for the shutdown to wait on); were it
    // to wait for the init, a SIGTERM here would wait out REDIS_STARTUP_TIMEOUT_MS (60 s).
    proxy = await startTcpProxy(await freePort()); // nothing listens behind it
    const child = spawn(process.execPath, [COORDINATOR_MAIN], {
      env: {
        ...process.env,
        PORT: String(await freePort()),
        HOST: '127.0.0.1',
        REDIS_URL: proxy.url,
        KEY_PREFIX: uniquePrefix('redis-down-sigterm'),
        COORDINATOR_TOKEN: 'm',
        COORDINATOR_ADMIN_TOKEN: 'a',
        LOG_LEVEL: 'warn',
        REDIS_STARTUP_TIMEOUT_MS: '60000',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const unregister = onProcessExit(() => child.kill('SIGKILL'));
    let output = '';
    const collect = (chunk: Buffer): void => void (output += chunk.toString());
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    try {
      const attempts = proxy;
      await waitFor(() => /key layout check: Redis did not answer/.test(output), {
        timeoutMs: 30_000,
        message: () => `the coordinator to wait for Redis (${attempts.accepted} attempts)`,
      });
      const signalled = Date.now();
      child.kill('SIGTERM');
      const [code, signal] = await exited;
      expect(Date.now() - signalled).toBeLessThan(5000);
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      unregister();
    }
  });

  it('exits 1 with an actionable message once REDIS_STARTUP_TIMEOUT_MS is over', async () => {
    redis = await startRestartableRedis();
    await redis.stop();
    const started = Date.now();
    const error = await CoordinatorProcess.start({
      prefix: uniquePrefix('redis-down-timeout'),
      redisUrl: redis.url,
      readyTimeoutMs: 30_000,
      env: { REDIS_STARTUP_TIMEOUT_MS: '1500' },
    }).then(
      () => new Error('started without Redis'),
      (e: unknown) => e as Error,
    );
    expect(error.message).toMatch(/exited \(1\) before it was ready/);
    expect(error.message).toMatch(
      /Redis did not answer for 1500 ms while the coordinator started.*REDIS_URL.*REDIS_STARTUP_TIMEOUT_MS/s,
    );
    expect(error.message).not.toMatch(/\n\s+at /);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
  });
});
