import { Redis as Redis5 } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import { directReaderEndpoint } from './direct-reader-endpoint.js';

/** The endpoint for what ioredis 5 resolves from `url` and `options` (no socket is opened). */
function endpointOf(url: string | undefined, options: Record<string, unknown> = {}): unknown {
  const resolved = (
    url === undefined
      ? new Redis5({ ...options, lazyConnect: true })
      : new Redis5(url, { ...options, lazyConnect: true })
  ).options;
  type Resolved = Parameters<typeof directReaderEndpoint>[0];
  return directReaderEndpoint(
    resolved as unknown as Resolved,
    new Redis5({ lazyConnect: true }).options as unknown as Resolved,
  );
}

describe('directReaderEndpoint', () => {
  it('takes host, port, database, TLS and the connection name from a URL as ioredis reads it', () => {
    expect(endpointOf('rediss://h.example:6380/3', { connectionName: 'rsc-reader' })).toEqual({
      socket: { host: 'h.example', port: 6380 },
      tls: {},
      db: 3,
      connectTimeoutMs: 10_000,
      keepAliveMs: 0,
      noDelay: true,
      connectionName: 'rsc-reader',
    });
  });

  it('authenticates as ioredis 5 does: user and password, a user alone, a password alone', () => {
    expect(endpointOf('redis://alice:s%40cret@h:1')).toMatchObject({ auth: ['alice', 's@cret'] });
    // a user without a password (an ACL user with nopass) still sends AUTH user ""
    expect(endpointOf('redis://alice@h:1')).toMatchObject({ auth: ['alice', ''] });
    expect(endpointOf('redis://:pw@h:1')).toMatchObject({ auth: ['pw'] });
    expect(endpointOf('redis://h:1')).not.toHaveProperty('auth');
  });

  it('takes a Unix socket path, a TLS object, family, timeouts and keep-alive from options', () => {
    expect(endpointOf(undefined, { path: '/run/redis.sock' })).toMatchObject({
      socket: { path: '/run/redis.sock' },
    });
    expect(
      endpointOf(undefined, {
        host: 'h',
        port: 1,
        family: 6,
        tls: { servername: 'sni' },
        connectTimeout: 500,
        keepAlive: 1000,
        noDelay: false,
      }),
    ).toEqual({
      socket: { host: 'h', port: 1, family: 6 },
      tls: { servername: 'sni' },
      db: 0,
      connectTimeoutMs: 500,
      keepAliveMs: 1000,
      noDelay: false,
    });
  });

  it('takes numbers from a URL query (strings there) when they are whole numbers', () => {
    expect(endpointOf('redis://h:1?connectTimeout=5000&family=4')).toMatchObject({
      connectTimeoutMs: 5000,
      socket: { family: 4 },
    });
  });

  it.each([
    ['Sentinel', undefined, { sentinels: [{ host: 'a', port: 1 }], name: 'm' }, /Sentinel/],
    ['commandTimeout', 'redis://h:1', { commandTimeout: 100 }, /commandTimeout is set/],
    ['socketTimeout', 'redis://h:1', { socketTimeout: 100 }, /socketTimeout is set/],
    ['an option it does not know', 'redis://h:1', { somethingNew: true }, /somethingNew is set/],
    [
      'a number that is not one',
      'redis://h:1?connectTimeout=soon',
      {},
      /connectTimeoutMs is "NaN"/,
    ],
  ])('refuses %s (the readers then use ioredis)', (_what, url, options, reason) => {
    expect(endpointOf(url, options)).toEqual({ unsupported: expect.stringMatching(reason) });
  });

  it('ignores what does not apply to a reader: retry, queueing, pipelining, ioredis 6 reply options', () => {
    expect(
      endpointOf('redis://h:1', {
        retryStrategy: () => 1,
        maxRetriesPerRequest: 1,
        enableOfflineQueue: false,
        enableAutoPipelining: true,
        autoResendUnfulfilledCommands: false,
        replyMapping: 'legacy',
        himportFieldsets: true,
      }),
    ).toMatchObject({ socket: { host: 'h', port: 1 } });
  });
});
