import { Cluster, Redis } from 'ioredis';
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis5';
import { describe, expect, it } from 'vitest';
import { RedisConnectionOptionsError } from '../errors/redis/redis-connection-options.error.js';
import { createRedisConnection } from './create-redis-connection.js';
import type { RedisConnection } from './redis-connection.types.js';

/** The startup nodes a cluster client was given (a private field of ioredis). */
const startupNodes = (cluster: Cluster): unknown =>
  (cluster as unknown as { startupNodes: unknown }).startupNodes;

/** Creates without connecting, hands the connection to `check`, then disconnects. */
function inspect(
  options: Parameters<typeof createRedisConnection>[0],
  role: 'command' | 'reader' = 'command',
  readerClient?: 'bundled' | 'application',
): RedisConnection {
  const connection = createRedisConnection(options, role, {
    lazyConnect: true,
    ...(readerClient === undefined ? {} : { readerClient }),
  });
  connection.disconnect();
  return connection;
}

describe('createRedisConnection', () => {
  it('builds a standalone client from a URL or ioredis options', () => {
    const fromUrl = inspect('redis://user:secret@10.0.0.5:6380/2');
    expect(fromUrl).toBeInstanceOf(Redis);
    expect((fromUrl as Redis).options).toMatchObject({
      host: '10.0.0.5',
      port: 6380,
      db: 2,
      username: 'user',
      password: 'secret',
    });
    const tls = inspect('rediss://h:6379') as Redis;
    expect(tls.options.tls).toBeDefined();
    const fromOptions = inspect({ host: 'h', port: 7000 }) as Redis;
    expect(fromOptions.options).toMatchObject({ host: 'h', port: 7000 });
  });

  it('a TLS scheme in any case connects with TLS', () => {
    // the scheme is accepted without case, but ioredis turns TLS on only for a literal
    // "rediss://": an upper-case REDISS:// would send the password in clear text
    for (const url of ['REDISS://:pw@h:6379', 'Rediss://h:6379', '  rediss://h:6379 ']) {
      expect((inspect(url) as Redis).options.tls, url).toBeDefined();
    }
    expect((inspect('REDIS://h:6379') as Redis).options.tls).toBeUndefined();
    const cluster = inspect('REDISS+CLUSTER://a:7000') as Cluster;
    expect(cluster.options.redisOptions?.tls).toBeDefined();
  });

  it('reader connections run on ioredis 5 (RESP2, the faster decoder) whatever the application ioredis; other roles on the application one', () => {
    const reader = inspect('redis://h:1', 'reader');
    expect(reader).toBeInstanceOf(Redis5);
    expect((reader as Redis).options).toMatchObject({ host: 'h', port: 1 });
    // ioredis 5 has no protocol option: one given for the application's ioredis 6 is dropped
    expect((reader as Redis).options.protocol).toBeUndefined();
    expect(
      (inspect({ host: 'h', protocol: 3 }, 'reader') as Redis).options.protocol,
    ).toBeUndefined();
    const cluster = inspect(
      { cluster: ['a:1'], clusterOptions: { redisOptions: { protocol: 3 } } },
      'reader',
    );
    expect(cluster).toBeInstanceOf(Cluster5);
    expect((cluster as Cluster).options.redisOptions?.protocol).toBeUndefined();
    expect(inspect('rediss+cluster://a:1', 'reader')).toBeInstanceOf(Cluster5);
    // every other role: the application's ioredis, with its own default protocol
    const plain = new Redis({ lazyConnect: true });
    plain.disconnect();
    const command = inspect('redis://h:1', 'command');
    expect(command).toBeInstanceOf(Redis);
    expect((command as Redis).options.protocol).toBe(plain.options.protocol);
    expect(inspect({ cluster: ['a:1'] }, 'command')).toBeInstanceOf(Cluster);
  });

  it("readerClient 'application' builds readers with the application's ioredis, on RESP2", () => {
    // (under RSC_IOREDIS=5 the application's ioredis is ioredis 5 too: one class for both)
    const sameLibrary = (Redis as unknown) === (Redis5 as unknown);
    const reader = inspect(
      { host: 'h', protocol: 3, replyMapping: 'resp3' },
      'reader',
      'application',
    ) as Redis;
    expect(reader).toBeInstanceOf(Redis);
    if (!sameLibrary) expect(reader).not.toBeInstanceOf(Redis5);
    // RESP2, with the reply mapping RESP2 allows (ioredis 6 refuses 'resp3' without protocol 3)
    expect(reader.options.protocol).toBe(2);
    expect(reader.options.replyMapping).toBe('legacy');
    expect(reader.options.maxRetriesPerRequest).toBe(1);
    const plain = new Redis({ lazyConnect: true });
    plain.disconnect();
    expect(reader.options.keepAlive).toBe(plain.options.keepAlive);
    const cluster = inspect(
      {
        cluster: ['a:1'],
        clusterOptions: { redisOptions: { protocol: 3, replyMapping: 'resp3' } },
      },
      'reader',
      'application',
    ) as Cluster;
    expect(cluster).toBeInstanceOf(Cluster);
    if (!sameLibrary) expect(cluster).not.toBeInstanceOf(Cluster5);
    expect(cluster.options.redisOptions).toMatchObject({ protocol: 2, replyMapping: 'legacy' });
    expect(inspect('redis://h:1', 'reader', 'bundled')).toBeInstanceOf(Redis5);
  });

  it('bundled readers keep TCP keep-alive on (ioredis 6 default) unless the options say otherwise', () => {
    expect((inspect('redis://h:1', 'reader') as Redis).options.keepAlive).toBe(30_000);
    expect((inspect({ host: 'h' }, 'reader') as Redis).options.keepAlive).toBe(30_000);
    expect((inspect({ host: 'h', keepAlive: 0 }, 'reader') as Redis).options.keepAlive).toBe(0);
    const cluster = inspect({ cluster: ['a:1'] }, 'reader') as Cluster;
    expect(cluster.options.redisOptions?.keepAlive).toBe(30_000);
    const clusterUrl = inspect('redis+cluster://a:1', 'reader') as Cluster;
    expect(clusterUrl.options.redisOptions?.keepAlive).toBe(30_000);
    const own = inspect(
      { cluster: ['a:1'], clusterOptions: { redisOptions: { keepAlive: 5_000 } } },
      'reader',
    ) as Cluster;
    expect(own.options.redisOptions?.keepAlive).toBe(5_000);
  });

  it("a URL's query cannot undo a reader's required options, but may set its defaults", () => {
    const reader = inspect(
      'redis://:pw@h:1/2?maxRetriesPerRequest=20&autoResendUnfulfilledCommands=true&keepAlive=0&connectTimeout=500',
      'reader',
    ) as Redis;
    expect(reader.options).toMatchObject({
      host: 'h',
      port: 1,
      db: 2,
      password: 'pw',
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      keepAlive: '0',
      connectTimeout: '500',
    });
    // other roles keep what the URL says
    const command = inspect('redis://h:1?maxRetriesPerRequest=20') as Redis;
    expect(command.options.maxRetriesPerRequest).toBe('20');
  });

  it('reader connections fail commands fast instead of queuing them for ever', () => {
    expect((inspect('redis://h:1', 'reader') as Redis).options.maxRetriesPerRequest).toBe(1);
    expect(
      (inspect({ host: 'h', maxRetriesPerRequest: 50 }, 'reader') as Redis).options
        .maxRetriesPerRequest,
    ).toBe(1);
  });

  it('builds a cluster client from redis+cluster:// or a node list', () => {
    const fromUrl = inspect('redis+cluster://:pw@a:7000,b:7001,[::1]:7002') as Cluster;
    expect(fromUrl).toBeInstanceOf(Cluster);
    expect(startupNodes(fromUrl)).toEqual([
      { host: 'a', port: 7000 },
      { host: 'b', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(fromUrl.options.redisOptions?.password).toBe('pw');
    const fromList = inspect({ cluster: ['a:1', { host: 'b', port: 2 }] }, 'reader') as Cluster;
    expect(startupNodes(fromList)).toEqual([
      { host: 'a', port: 1 },
      { host: 'b', port: 2 },
    ]);
    expect(fromList.options.redisOptions?.maxRetriesPerRequest).toBe(1);
  });

  it('cluster readers and subscribers skip the ready check (one node connection each)', () => {
    const url = 'redis+cluster://a:7000,b:7001';
    expect((inspect(url, 'reader') as Cluster).options.enableReadyCheck).toBe(false);
    expect((inspect(url) as Cluster).options.enableReadyCheck).toBe(true);
    const subscriber = createRedisConnection(url, 'subscriber', { lazyConnect: true }) as Cluster;
    subscriber.disconnect();
    expect(subscriber.options.enableReadyCheck).toBe(false);
    const listed = inspect({ cluster: ['a:1'] }, 'reader') as Cluster;
    expect(listed.options.enableReadyCheck).toBe(false);
    // the user's cluster options win
    const own = inspect(
      { cluster: ['a:1'], clusterOptions: { enableReadyCheck: true } },
      'reader',
    ) as Cluster;
    expect(own.options.enableReadyCheck).toBe(true);
  });

  it('rejects malformed input with a clear error', () => {
    const bad = (options: unknown) => () =>
      createRedisConnection(options as never, 'command', { lazyConnect: true });
    expect(bad('http://h:1')).toThrow(/unsupported URL scheme/);
    expect(bad('redis://')).toThrow(RedisConnectionOptionsError);
    expect(bad('redis://h:1/x')).toThrow(/database number/);
    expect(bad('redis+cluster://')).toThrow(/malformed cluster URL|not "host:port"/);
    expect(bad('redis+cluster://a:1,b')).toThrow(/cluster node #1 "b" is not "host:port"/);
    expect(bad({ cluster: [] })).toThrow(/node list is empty/);
    expect(bad({ cluster: [{ host: 'a', port: 0 }] })).toThrow(/cluster node #0/);
    expect(bad(null)).toThrow(/got null/);
    expect(bad(42)).toThrow(/got number 42/);
    expect(bad({ host: 'h', keyPrefix: 'x:' })).toThrow(/keyPrefix "x:" is not supported/);
    expect(bad('redis://:secret@h:1/x')).toThrow(/\*\*\*@/);
  });
});
