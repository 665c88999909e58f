import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  createReaderConnection,
  DirectConnectionClosedError,
  DirectReaderClient,
  RedisHandshakeError,
  RedisReplyError,
  runScript,
  type DirectReaderEndpoint,
  type LuaScript,
} from '../../../libs/stream-coordinator/src/internal/index.js';
import { connectRedis5 } from '../../support/redis-client.js';
import { createTestRedis, redisUrl, useRedisPrefix } from '../../support/redis.js';
import { freePort } from '../../support/free-port.js';
import { type RedisServerProcess, spawnRedisServer } from '../../support/redis-server-process.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { waitFor } from '../../support/wait.js';

/**
 * The readers' direct connection against a real Redis: replies shaped as ioredis 5 shapes them
 * (the data plane reads both), scripts with the NOSCRIPT fallback, error replies, the handshake
 * (ACL user, database, name), and how it ends: killed mid-read, refused, QUIT.
 */
/** The entries of an `XREADGROUP` reply of one stream, ids as strings. */
function entriesOf(reply: unknown): Array<[string, unknown]> {
  const [[, entries]] = reply as [[unknown, Array<[Buffer | string, unknown]>]];
  return entries.map(([id, fields]) => [String(id), fields]);
}

/**
 * A `redis-server` of the calling `describe` block's own, in a temp dir, stopped (and its dir
 * removed) after the block; `args` gets that dir.
 */
function ownRedisServer(
  name: string,
): (args?: (dir: string) => string[]) => Promise<RedisServerProcess> {
  let dir: TempDir | undefined;
  let server: RedisServerProcess | undefined;
  afterAll(async () => {
    await server?.stop();
    dir?.remove();
  });
  return async (args = () => []) => {
    dir = createTempDir(name);
    server = await spawnRedisServer({
      port: await freePort(),
      dir: dir.path,
      args: args(dir.path),
    });
    return server;
  };
}

describe('DirectReaderClient', () => {
  const { prefix, redis } = useRedisPrefix('direct-reader');
  const open: DirectReaderClient[] = [];
  const others: Array<{ disconnect(): void }> = [];

  afterEach(() => {
    for (const c of open.splice(0)) c.disconnect();
    for (const c of others.splice(0)) c.disconnect();
  });

  /** A direct connection to the suite's Redis (or `url`), closed after the test. */
  function direct(url = redisUrl(), extras: { connectionName?: string } = {}): DirectReaderClient {
    const connection = createReaderConnection(url, extras);
    if (!(connection instanceof DirectReaderClient)) {
      throw new Error(`expected a direct connection for ${url}`);
    }
    connection.on('error', () => undefined);
    open.push(connection);
    return connection;
  }

  it('reads a stream batch as ioredis 5 does: Buffers, same entries, across many chunks', async () => {
    const key = `${prefix}:batch`;
    await redis().xgroup('CREATE', key, 'g', '0', 'MKSTREAM');
    const payload = randomBytes(700).toString('base64'); // ≈ 1 KB per entry, ≈ 1 MB in all
    for (let i = 0; i < 1000; i += 100) {
      const pipeline = redis().pipeline();
      for (let j = i; j < i + 100; j++)
        pipeline.xadd(key, '*', 'payload', `${j}:${payload}`, 'k', '');
      await pipeline.exec();
    }
    await redis().xgroup('CREATE', key, 'g2', '0');
    const reference = connectRedis5(redisUrl());
    others.push(reference);
    const expected = await reference.callBuffer(
      'XREADGROUP',
      'GROUP', 'g2', 'c', 'COUNT', 1000, 'STREAMS', key, '>',
    ); // prettier-ignore
    const got = await direct().xreadgroupBuffer(
      'GROUP', 'g', 'c', 'COUNT', 1000, 'STREAMS', key, '>',
    ); // prettier-ignore
    // the same entries; ids may come as strings (a reply that arrived whole is read in one pass)
    expect(entriesOf(got)).toEqual(entriesOf(expected));
    expect(entriesOf(got)).toHaveLength(1000);
    await redis().xgroup('CREATE', key, 'g3', '0');
    const small = await direct().xreadgroupBuffer(
      'GROUP', 'g3', 'c', 'COUNT', 3, 'STREAMS', key, '>',
    ); // prettier-ignore
    const [first] = (small as Array<[Buffer, Array<[string, Buffer[]]>]>)[0]?.[1] ?? [];
    expect(typeof first?.[0]).toBe('string');
    expect(entriesOf(small)).toEqual(entriesOf(expected).slice(0, 3));
    // a block that times out answers null, as for ioredis
    expect(
      await direct().xreadgroupBuffer(
        'GROUP', 'g', 'c', 'COUNT', 10, 'BLOCK', 50, 'STREAMS', key, '>',
      ), // prettier-ignore
    ).toBeNull();
  });

  it('runs a script by its body first, then by its SHA', async () => {
    const key = `${prefix}:script`;
    const connection = direct();
    const script: LuaScript = {
      name: 'rscTestIncr',
      numberOfKeys: 1,
      lua: `return {redis.call('INCRBY', KEYS[1], ARGV[1]), KEYS[1]} -- ${prefix}`,
    };
    const sha = createHash('sha1').update(script.lua).digest('hex');
    const written = recordCommands(connection);
    // first on this connection: EVAL (which caches it in Redis), so a script corked in front of
    // a read never comes back NOSCRIPT behind it; EVALSHA after that
    expect(await redis().script('EXISTS', sha)).toEqual([0]);
    expect(await runScript(connection, script, [key, 2])).toEqual([2, key]);
    expect(written.splice(0)).toEqual(['EVAL']);
    expect(await redis().script('EXISTS', sha)).toEqual([1]);
    expect(await runScript(connection, script, [key, 3], true)).toEqual([5, Buffer.from(key)]);
    expect(written).toEqual(['EVALSHA']);
  });

  describe('on a Redis of its own (SCRIPT FLUSH, a script that is refused)', () => {
    const startRedis = ownRedisServer('direct-reader-scripts');

    it('sends a script again by its body after NOSCRIPT, and after a refused first EVAL', async () => {
      const server = await startRedis();
      const connection = direct(server.url);
      const written = recordCommands(connection);
      const script: LuaScript = {
        name: 'rscTestEcho',
        numberOfKeys: 1,
        lua: 'return KEYS[1]',
      };
      expect(await runScript(connection, script, ['a'])).toBe('a');
      // Redis loses its script cache (a restart with the same socket cannot happen; a flush can)
      const admin = createTestRedis({ url: server.url });
      others.push(admin);
      await admin.script('FLUSH');
      expect(await runScript(connection, script, ['b'])).toBe('b');
      expect(written.splice(0)).toEqual(['EVAL', 'EVALSHA', 'EVAL']);
      // a first EVAL Redis refuses (here: a script that does not compile) is not remembered as
      // sent: the next call sends the body again, not an EVALSHA bound to come back NOSCRIPT
      const broken: LuaScript = { name: 'rscTestBroken', numberOfKeys: 0, lua: 'return +' };
      await expect(runScript(connection, broken, [])).rejects.toBeInstanceOf(RedisReplyError);
      await expect(runScript(connection, broken, [])).rejects.toBeInstanceOf(RedisReplyError);
      expect(written).toEqual(['EVAL', 'EVAL']);
    });
  });

  it('a command that cannot be encoded fails alone: the replies after it reach their commands', async () => {
    const connection = direct();
    const key = `${prefix}:encode`;
    const bad = connection.send(['XADD', key, '*', 'a', null as unknown as string], 'text');
    const good = connection.xadd(key, '*', 'b', '2');
    const length = connection.send(['XLEN', key], 'text');
    await expect(bad).rejects.toBeInstanceOf(TypeError);
    expect(await good).toMatch(/^\d+-\d+$/);
    expect(await length).toBe(1);
  });

  it('a refused SELECT is fatal: nothing runs in database 0 instead', async () => {
    const url = new URL(redisUrl());
    url.pathname = '/9999';
    const connection = createReaderConnection(url.href) as DirectReaderClient;
    open.push(connection);
    connection.on('error', () => undefined);
    const key = `${prefix}:wrong-db`;
    const error = await connection.xadd(key, '*', 'a', '1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DirectConnectionClosedError);
    expect((error as Error).message).toMatch(/SELECT 9999/);
    expect(await redis().exists(key)).toBe(0);
  });

  it('rejects with Redis’s own error text, and keeps working', async () => {
    const connection = direct();
    const error = await connection
      .xreadgroupBuffer('GROUP', 'nogroup', 'c', 'STREAMS', `${prefix}:none`, '>')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedisReplyError);
    expect((error as RedisReplyError).message).toMatch(/^NOGROUP /);
    expect((error as RedisReplyError).code).toBe('NOGROUP');
    expect(await connection.xadd(`${prefix}:after`, '*', 'a', '1')).toMatch(/^\d+-\d+$/);
  });

  it('names itself, selects its database and authenticates as an ACL user', async () => {
    const user = `${prefix}-user`;
    const password = randomBytes(12).toString('hex');
    await redis().call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '+@all');
    try {
      const url = new URL(redisUrl());
      url.username = user;
      url.password = password;
      url.pathname = '/5';
      const name = `${prefix}-name`;
      const connection = direct(url.href, { connectionName: name });
      const key = `${prefix}:db5`;
      await connection.xadd(key, '*', 'a', '1');
      const db5 = createTestRedis({ db: 5 });
      others.push(db5);
      expect(await db5.xlen(key)).toBe(1);
      await db5.del(key);
      expect(await redis().exists(key)).toBe(0);
      await waitFor(() => connection.status === 'ready', {
        timeoutMs: 5000,
        intervalMs: 5,
        message: 'the status',
      });
      const list = String(await redis().client('LIST'));
      expect(list).toMatch(new RegExp(`name=${name} .*user=${user}`));
    } finally {
      await redis().call('ACL', 'DELUSER', user);
    }
  });

  it('a refused AUTH is an error naming the step; queued commands fail and it ends', async () => {
    const url = new URL(redisUrl());
    url.username = `${prefix}-nobody`;
    url.password = 'wrong';
    const connection = createReaderConnection(url.href) as DirectReaderClient;
    open.push(connection);
    const errors: unknown[] = [];
    connection.on('error', (e: unknown) => errors.push(e));
    const queued = connection.xadd(`${prefix}:never`, '*', 'a', '1').catch((e: unknown) => e);
    expect(await queued).toBeInstanceOf(DirectConnectionClosedError);
    expect(((await queued) as Error).message).toMatch(/WRONGPASS/);
    await waitFor(() => connection.status === 'end', {
      timeoutMs: 5000,
      intervalMs: 5,
      message: 'the status',
    });
    const handshake = errors.find((e) => e instanceof RedisHandshakeError);
    expect((handshake as Error | undefined)?.message).toMatch(/AUTH as .*-nobody.*WRONGPASS/);
    expect(await redis().exists(`${prefix}:never`)).toBe(0);
  });

  it('a user without a password (ACL nopass) is still authenticated as that user', async () => {
    const user = `${prefix}-nopass`;
    await redis().call('ACL', 'SETUSER', user, 'on', 'nopass', '~*', '+@all');
    try {
      const url = new URL(redisUrl());
      url.username = user;
      const name = `${prefix}-nopass`;
      const connection = direct(url.href, { connectionName: name });
      await connection.xadd(`${prefix}:nopass`, '*', 'a', '1');
      const list = String(await redis().client('LIST'));
      expect(list).toMatch(new RegExp(`name=${name} .*user=${user} `));
    } finally {
      await redis().call('ACL', 'DELUSER', user);
    }
  });

  it('passes over what ioredis passes over: a password the server does not need, a refused name', async () => {
    // the suite's Redis has no password on its default user: AUTH <password> is refused
    const url = new URL(redisUrl());
    url.password = 'not-needed';
    expect(await direct(url.href).xadd(`${prefix}:pw`, '*', 'a', '1')).toMatch(/^\d+-\d+$/);
    // an ACL user that may not name its connection
    const user = `${prefix}-noname`;
    await redis().call('ACL', 'SETUSER', user, 'on', 'nopass', '~*', '+@all', '-client|setname');
    try {
      const named = new URL(redisUrl());
      named.username = user;
      const connection = direct(named.href, { connectionName: 'rsc-reader' });
      expect(await connection.xadd(`${prefix}:noname`, '*', 'a', '1')).toMatch(/^\d+-\d+$/);
      expect(connection.status).toBe('ready');
    } finally {
      await redis().call('ACL', 'DELUSER', user);
    }
  });

  it('killed while a read blocks: the read fails at once, and the connection ends', async () => {
    const key = `${prefix}:killed`;
    await redis().xgroup('CREATE', key, 'g', '$', 'MKSTREAM');
    const name = `${prefix}-killed`;
    const connection = direct(redisUrl(), { connectionName: name });
    const events: string[] = [];
    connection.on('close', () => events.push('close'));
    connection.on('end', () => events.push('end'));
    const read = connection
      .xreadgroupBuffer('GROUP', 'g', 'c', 'BLOCK', 30_000, 'STREAMS', key, '>')
      .catch((e: unknown) => e);
    // blocked in its read (not only connected): the kill then ends a command in flight
    let id: string | undefined;
    await waitFor(
      async () => {
        const line = String(await redis().client('LIST'))
          .split('\n')
          .find((l) => l.includes(` name=${name} `));
        id = line?.includes('cmd=xreadgroup') ? /^id=(\d+)/.exec(line)?.[1] : undefined;
        return id !== undefined;
      },
      { timeoutMs: 5000, intervalMs: 10, message: 'the blocked read' },
    );
    await redis().call('CLIENT', 'KILL', 'ID', id as string);
    expect(await read).toBeInstanceOf(DirectConnectionClosedError);
    expect(connection.status).toBe('end');
    expect(events).toEqual(['close', 'end']);
    await expect(connection.xadd(key, '*', 'a', '1')).rejects.toBeInstanceOf(
      DirectConnectionClosedError,
    );
  });

  it('matches a long run of replies to their commands in order (the waiting list compacts)', async () => {
    const connection = direct();
    const key = `${prefix}:many`;
    // more commands in flight than the list keeps answered slots for (1,024): replies arrive in
    // chunks while later commands still wait, so the list is compacted under them
    const replies = await Promise.all(
      Array.from({ length: 3000 }, () => connection.send(['INCR', key], 'text')),
    );
    expect(replies).toEqual(Array.from({ length: 3000 }, (_, i) => i + 1));
  });

  describe('over a Unix socket', () => {
    const startRedis = ownRedisServer('direct-reader-unix');

    it('connects by `path`, as ioredis does, and reads', async () => {
      let path = '';
      await startRedis((dir) => {
        path = join(dir, 'redis.sock');
        return ['--unixsocket', path, '--unixsocketperm', '700'];
      });
      const connection = createReaderConnection({ path });
      expect(connection).toBeInstanceOf(DirectReaderClient);
      const reader = connection as DirectReaderClient;
      reader.on('error', () => undefined);
      open.push(reader);
      const key = `${prefix}:unix`;
      await reader.send(['XGROUP', 'CREATE', key, 'g', '0', 'MKSTREAM'], 'text');
      await reader.xadd(key, '*', 'payload', 'over the socket');
      const reply = (await reader.xreadgroupBuffer(
        'GROUP', 'g', 'c', 'COUNT', 10, 'STREAMS', key, '>',
      )) as Array<[Buffer, Array<[Buffer, Buffer[]]>]>; // prettier-ignore
      expect(reply[0]?.[1][0]?.[1].map(String)).toEqual(['payload', 'over the socket']);
    });
  });

  describe('nothing listening', () => {
    let server: Server | undefined;
    afterAll(() => server?.close());

    it('a refused connection is an error; its commands fail and it ends', async () => {
      // a port that was free a moment ago
      server = createServer();
      await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as { port: number }).port;
      await new Promise<void>((resolve) => server?.close(() => resolve()));
      server = undefined;
      const endpoint: DirectReaderEndpoint = {
        socket: { host: '127.0.0.1', port },
        db: 0,
        connectTimeoutMs: 5000,
        keepAliveMs: 0,
        noDelay: true,
      };
      const connection = new DirectReaderClient(endpoint);
      open.push(connection);
      const errors: Error[] = [];
      connection.on('error', (e: Error) => errors.push(e));
      await expect(connection.xadd('k', '*', 'a', '1')).rejects.toBeInstanceOf(
        DirectConnectionClosedError,
      );
      expect(connection.status).toBe('end');
      expect(errors[0]?.message).toMatch(/ECONNREFUSED/);
    });
  });

  it('QUIT is answered, then the connection ends', async () => {
    const connection = direct();
    await waitFor(() => connection.status === 'ready', {
      timeoutMs: 5000,
      intervalMs: 5,
      message: 'the status',
    });
    expect(await connection.quit()).toBe('OK');
    await waitFor(() => connection.status === 'end', {
      timeoutMs: 5000,
      intervalMs: 5,
      message: 'the status',
    });
  });
});

/** The name of every command `connection` writes from now on, in order. */
function recordCommands(connection: DirectReaderClient): string[] {
  const written: string[] = [];
  const write = connection.stream.write.bind(connection.stream);
  connection.stream.write = ((chunk: string | Buffer, ...rest: never[]) => {
    written.push(String(chunk).split('\r\n')[2] ?? '');
    return write(chunk, ...rest);
  }) as typeof connection.stream.write;
  return written;
}
