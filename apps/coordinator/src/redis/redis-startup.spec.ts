import { ReplyError } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  isRedisUnavailable,
  MAX_DELAY_MS,
  startupRetryDelay,
  untilRedisAnswers,
} from './redis-startup.js';
import { RedisUnavailableAtStartError } from './redis-unavailable-at-start.error.js';
import { StartupStoppedError } from './startup-stopped.error.js';

const replyError = (message: string): Error =>
  new (ReplyError as new (m: string) => Error)(message);

describe('isRedisUnavailable', () => {
  it('counts connection failures and not-ready replies, not refusals', () => {
    expect(isRedisUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isRedisUnavailable(replyError('LOADING Redis is loading the dataset in memory'))).toBe(
      true,
    );
    expect(isRedisUnavailable(replyError('CLUSTERDOWN The cluster is down'))).toBe(true);
    expect(isRedisUnavailable(replyError('NOPERM this user has no permissions'))).toBe(false);
    expect(isRedisUnavailable(replyError('ERR Error running script'))).toBe(false);
    expect(isRedisUnavailable('not an error')).toBe(false);
  });

  it('does not count a failure of the step itself (a corrupt record, a bug) as Redis down', () => {
    // JSON.parse of a corrupt catalog record: retrying for REDIS_STARTUP_TIMEOUT_MS cannot help,
    // and the final message would send the operator to check that Redis is up.
    expect(isRedisUnavailable(new SyntaxError('Unexpected token } in JSON at position 3'))).toBe(
      false,
    );
    expect(
      isRedisUnavailable(new TypeError("Cannot read properties of undefined (reading 'x')")),
    ).toBe(false);
    expect(isRedisUnavailable(new RangeError('Invalid array length'))).toBe(false);
  });

  it('judges a Cluster that reached no node by the last node error', () => {
    // ioredis's ClusterAllFailedError: a wrong password on every node is a refusal, not an outage.
    const allFailed = (lastNodeError: Error): Error =>
      Object.assign(new Error('Failed to refresh slots cache.'), {
        name: 'ClusterAllFailedError',
        lastNodeError,
      });
    expect(
      isRedisUnavailable(allFailed(replyError('WRONGPASS invalid username-password pair'))),
    ).toBe(false);
    expect(isRedisUnavailable(allFailed(new Error('connect ECONNREFUSED 127.0.0.1:7000')))).toBe(
      true,
    );
    expect(isRedisUnavailable(allFailed(replyError('LOADING Redis is loading')))).toBe(true);
  });
});

describe('untilRedisAnswers', () => {
  const quiet = { warn: () => undefined, firstDelayMs: 1 };

  it('gives up once the app is shutting down, without limit too', async () => {
    // app.close() while Redis is down: no retry loop may keep the process alive.
    let stopping = false;
    let calls = 0;
    const waiting = untilRedisAnswers(
      'catalog load',
      () => {
        calls++;
        stopping = calls >= 2;
        return Promise.reject(new Error('Connection is closed.'));
      },
      { ...quiet, timeoutMs: 0, stopped: () => stopping },
    );
    await expect(waiting).rejects.toBeInstanceOf(StartupStoppedError);
    expect(calls).toBe(2);
  });

  it('retries while Redis is unreachable and returns the first answer', async () => {
    let calls = 0;
    const warnings: string[] = [];
    const value = await untilRedisAnswers(
      'load',
      () => (++calls < 3 ? Promise.reject(new Error('Connection is closed.')) : Promise.resolve(7)),
      { timeoutMs: 5000, firstDelayMs: 1, warn: (m) => warnings.push(m) },
    );
    expect(value).toBe(7);
    expect(calls).toBe(3);
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(
      /^load: Redis did not answer \(attempt 1: Connection is closed\.\)/,
    );
  });

  it('throws a refusal at once', async () => {
    let calls = 0;
    const denied = replyError('NOPERM no permissions');
    await expect(
      untilRedisAnswers('load', () => (calls++, Promise.reject(denied)), {
        timeoutMs: 5000,
        ...quiet,
      }),
    ).rejects.toBe(denied);
    expect(calls).toBe(1);
  });

  it('gives up after the timeout with an error naming the step and the setting', async () => {
    const error = await untilRedisAnswers(
      'key layout check',
      () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:1')),
      { timeoutMs: 30, ...quiet },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisUnavailableAtStartError);
    expect((error as Error).message).toMatch(
      /did not answer for 30 ms .*\(key layout check; last error: connect ECONNREFUSED 127\.0\.0\.1:1\).*REDIS_STARTUP_TIMEOUT_MS/,
    );
  });

  it('keeps trying without limit when the timeout is 0', async () => {
    let calls = 0;
    const value = await untilRedisAnswers(
      'load',
      () => (++calls < 8 ? Promise.reject(new Error('down')) : Promise.resolve('up')),
      { timeoutMs: 0, ...quiet },
    );
    expect(value).toBe('up');
    expect(calls).toBe(8);
  });

  it('reports the reason it waits for before each pause', async () => {
    const reasons: string[] = [];
    let calls = 0;
    await untilRedisAnswers(
      'catalog load',
      () => (++calls < 2 ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve()),
      { timeoutMs: 0, ...quiet, onWaiting: (r) => reasons.push(r) },
    );
    expect(reasons).toEqual(['waiting for Redis (catalog load): connect ECONNREFUSED']);
  });
});

describe('startupRetryDelay', () => {
  it('doubles up to 5 s and takes up to a quarter off at random', () => {
    expect([1, 2, 3, 4].map((n) => startupRetryDelay(n, 100, 0))).toEqual([100, 200, 400, 800]);
    expect(startupRetryDelay(10, 100, 0)).toBe(MAX_DELAY_MS);
    expect(startupRetryDelay(60, 100, 0)).toBe(MAX_DELAY_MS);
    expect(startupRetryDelay(10, 100, 0.999)).toBeGreaterThan(MAX_DELAY_MS * 0.75);
    expect(startupRetryDelay(10, 100, 0.999)).toBeLessThan(MAX_DELAY_MS * 0.76);
  });
});
