import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import {
  COORDINATOR_MAIN,
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { onProcessExit } from '../support/process-cleanup.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import { uniquePrefix } from '../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { waitFor, waitForNoProblems } from '../support/wait.js';

interface ReadyBody {
  details?: Record<string, { status: string; reason?: string }>;
}

/**
 * A coordinator started while Redis does not answer (a Redis restarting beside it, a pod that
 * comes up first) listens at once and waits for Redis instead of exiting (without limit by
 * default; with a `REDIS_STARTUP_TIMEOUT_MS`, it then exits 1 with a message saying what to
 * check). The proxy in front of Redis counts the coordinator's connection attempts, so the test
 * knows the coordinator kept trying.
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

  it('listens at once, answers 503 with the reason until Redis answers, then starts (no limit by default)', async () => {
    redis = await startRestartableRedis();
    await redis.stop();
    proxy = await startTcpProxy(redis.port);
    const port = await freePort();
    let exited: Error | undefined;
    const starting = CoordinatorProcess.start({
      prefix: uniquePrefix('redis-down-start'),
      redisUrl: proxy.url,
      port,
      readyTimeoutMs: 90_000,
      // REDIS_STARTUP_TIMEOUT_MS left at its default (0: wait without limit)
      env: { STREAMS: 'orders:2' },
    });
    starting.catch((e: unknown) => {
      exited = e as Error;
    });
    const anonymous = new CoordinatorApi(`http://127.0.0.1:${port}`, null);
    const member = anonymous.as(TEST_TOKENS.member);
    const attempts = proxy;
    // Longer than the first backoff steps together (0.1+0.2+0.4+0.8+1.6+3.2 s): the process
    // keeps serving its health routes, keeps trying and does not exit.
    await waitForNoProblems(
      async () => {
        if (exited) throw exited;
        const problems: string[] = [];
        const live = await anonymous.get('/health/live').catch(() => null);
        if (live?.status !== 200) return [`live ${live?.status ?? 'unreachable'}`];
        const ready = await member.get<ReadyBody>('/health/ready');
        if (ready.status !== 503) problems.push(`ready ${ready.status}`);
        const reason = ready.body.details?.coordinator?.reason ?? '';
        if (!reason.startsWith('waiting for Redis (key layout check): ')) problems.push(reason);
        const route = await member.get<{ error?: { code?: string; message?: string } }>(
          '/v1/streams/orders',
        );
        if (route.status !== 503 || route.body.error?.code !== 'COORDINATOR_NOT_AVAILABLE')
          problems.push(`route ${route.status} ${JSON.stringify(route.body)}`);
        else if (route.headers.get('retry-after') !== '1') problems.push('no Retry-After');
        if (attempts.accepted < 8) problems.push(`${attempts.accepted} connection attempts`);
        return problems;
      },
      {
        timeoutMs: 30_000,
        intervalMs: 200,
        message: 'the coordinator serves live 200, ready 503 and 503 elsewhere while Redis is down',
        retryErrors: true,
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 7000)); // past every backoff step
    if (exited) throw exited;
    await redis.restart();
    coordinator = await starting;
    const res = await new CoordinatorApi(coordinator.url).request('GET', '/v1/streams/orders');
    expect(res.status).toBe(200);
    const ready = await anonymous.get<ReadyBody>('/health/ready');
    expect(ready.status).toBe(200);
    // One line per attempt, saying what it waits for and when it tries next; no stack trace.
    const output = coordinator.output();
    const lines = output.split('\n').filter((l) => l.includes('Redis did not answer'));
    expect(lines.length, lines.join('\n')).toBeGreaterThanOrEqual(3);
    expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(15);
    expect(lines[0]).toMatch(
      /key layout check: Redis did not answer \(attempt 1: no connection \(refused, closed or timed out\)\); next attempt in \d+\.\d s, waiting for it without limit \(REDIS_STARTUP_TIMEOUT_MS=0\)/,
    );
    expect(output).not.toMatch(/\n\s+at /);
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
        COORDINATOR_TOKEN: TEST_TOKENS.member,
        COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
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
