import { NonRetryableError } from '@redis-stream-coordinator/nestjs';
import { connectRedis } from '../support/redis-client.js';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { execFileSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { uniquePrefix } from '../support/redis.js';
import { spawnRedisServer } from '../support/redis-server-process.js';
import { createTempDir } from '../support/temp-dir.js';
import { type MemberApp, startMemberApp } from '../library/e2e/member-app.js';
import {
  ACL_PASSWORDS,
  type AclRedis,
  renderUsersAcl,
  startAclRedis,
} from './support/acl-redis.js';
import { DOCKER_DIR, loadCompose } from './support/deploy-files.js';

/**
 * Redis as a security boundary (docs/operations.md, "Security" › "Redis"): a private
 * `redis-server` loads the ACL file docker/redis/users-acl.sh generates; the real coordinator runs
 * as `rsc-coordinator`, a Nest app with a handler as `rsc-worker`, a publish-only app as
 * `rsc-producer`. Messages flow end to end (handled, acked, one dead-lettered), and the worker
 * and producer users are refused every control-plane write (group state, fences, catalog).
 */
describe('Redis ACLs: coordinator, worker and producer users', () => {
  const prefix = uniquePrefix('acl');
  let redis: AclRedis;
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  let worker: MemberApp;
  let producer: MemberApp;
  const clients: Redis[] = [];
  const connect = (url: string): Redis => {
    const client = connectRedis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
    client.on('error', () => undefined); // each refusal is asserted on its command
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    redis = await startAclRedis(prefix);
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: redis.url('rsc-coordinator'),
      env: { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    api = new CoordinatorApi(coordinator.url);
    worker = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redis.url('rsc-worker'),
      group: 'billing',
      handle: async (message) => {
        if (message.payload.seq === 13) throw new NonRetryableError('seq 13 is poison');
        // a retry: redelivered by the fenced XCLAIM script with the worker user
        if (message.payload.seq === 7 && message.deliveryCount === 1) throw new Error('transient');
      },
    });
    producer = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redis.url('rsc-producer'),
      group: 'billing',
    });
  });

  afterAll(async () => {
    await producer?.app.close();
    await worker?.app.close();
    await coordinator?.stop();
    for (const client of clients) client.disconnect();
    await redis?.stop();
  });

  it('the worker handles what the producer publishes, each with its own user', async () => {
    await vi.waitFor(() => expect(worker.runtime.status().phase).toBe('active'), {
      timeout: 20_000,
      interval: 50,
    });
    for (let seq = 0; seq < 20; seq++)
      await producer.producer.publish('orders', `customer-${seq}`, { seq });
    await vi.waitFor(() => expect(worker.handled.length).toBe(19), {
      timeout: 20_000,
      interval: 50,
    });
    expect(worker.handled.find((h) => h.seq === 7)?.deliveryCount).toBe(2);
    const admin = connect(redis.adminUrl);
    const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    // Dead-lettered with the worker user (XADD to `<p>:{orders}:dlq`).
    await vi.waitFor(async () => expect(await admin.xlen(routing.deadLetterKey)).toBe(1), {
      timeout: 10_000,
      interval: 50,
    });
    // Every entry acked (ack scripts read the fence in the meta hash with read-only access).
    await vi.waitFor(
      async () => {
        let pending = 0;
        for (const shard of routing.shards) {
          const [count] = (await admin.xpending(shard.key, 'billing')) as [number];
          pending += count;
        }
        expect(pending).toBe(0);
      },
      { timeout: 10_000, interval: 50 },
    );
    const errors = [...worker.logs, ...producer.logs].filter((l) => l.level === 'error');
    expect(errors.map((l) => l.message).filter((m) => !m.includes('poison'))).toEqual([]);
    // Nothing refused anywhere, at any log level (the nudge subscription included).
    const refused = [...worker.logs, ...producer.logs].filter((l) =>
      /NOPERM|no permissions/.test(l.message),
    );
    expect(refused).toEqual([]);
    expect(coordinator.output()).not.toMatch(/NOPERM|no permissions/);
  });

  it('a rebalance between two workers (release, acquire, claim) runs with the worker user', async () => {
    const second = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redis.url('rsc-worker'),
      group: 'billing',
      handle: async () => undefined,
    });
    try {
      await vi.waitFor(
        () => {
          expect(second.runtime.status().held.length).toBe(2);
          expect(worker.runtime.status().held.length).toBe(2);
        },
        { timeout: 20_000, interval: 50 },
      );
      for (let seq = 100; seq < 120; seq++)
        await producer.producer.publish('orders', `customer-${seq}`, { seq });
      await vi.waitFor(
        () =>
          expect([...worker.handled, ...second.handled].filter((h) => h.seq >= 100).length).toBe(
            20,
          ),
        { timeout: 20_000, interval: 50 },
      );
    } finally {
      await second.app.close();
    }
    // the shards come back to the first worker once the second has left
    await vi.waitFor(() => expect(worker.runtime.status().held.length).toBe(4), {
      timeout: 20_000,
      interval: 50,
    });
    const refused = [...worker.logs, ...second.logs].filter((l) =>
      /NOPERM|no permissions/.test(l.message),
    );
    expect(refused).toEqual([]);
    expect(second.logs.filter((l) => l.level === 'error')).toEqual([]);
  });

  it('the worker user is refused every control-plane write, and reading group state', async () => {
    const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    const shardKey = routing.shards[0]?.key as string;
    const meta = `${shardKey}:meta`;
    const group = `${prefix}:{@g:billing}`;
    const client = connect(redis.url('rsc-worker'));
    // Fences: readable (the scripts read them), never writable.
    expect(await client.hget(meta, 'owner:billing')).toMatch(/^\d+:/);
    await expect(client.hset(meta, 'owner:billing', '999:intruder')).rejects.toThrow(/NOPERM/);
    await expect(client.hdel(meta, 'owner:billing')).rejects.toThrow(/NOPERM/);
    await expect(client.hset(meta, 'state', 'closed')).rejects.toThrow(/NOPERM/);
    await expect(client.del(meta)).rejects.toThrow(/NOPERM/);
    // Nor through a script: keys declared to EVAL count as written, and a write to an
    // undeclared key is checked inside the script.
    await expect(
      client.eval("return redis.call('HGET', KEYS[1], 'state')", 1, meta),
    ).rejects.toThrow(/NOPERM/);
    await expect(
      client.eval(
        "return redis.call('HSET', KEYS[1] .. ':meta', 'owner:billing', '999:intruder')",
        1,
        shardKey,
      ),
    ).rejects.toThrow(/can't run this command/);
    await expect(
      client.eval(
        "return redis.call('XADD', KEYS[1] .. ':dlq', '*', 'k', 'v') and redis.call('XADD', ARGV[1], '*', 'type', 'FAKE')",
        1,
        shardKey,
        `${group}:events`,
      ),
    ).rejects.toThrow(/can't access at least one of the keys/);
    // Replay marks of dead letters (docs/protocol.md §16.1): the coordinator's, not a worker's.
    const replays = `${routing.deadLetterKey}:replays`;
    await expect(client.hset(replays, '0-1', '{"state":"done"}')).rejects.toThrow(/NOPERM/);
    await expect(client.hget(replays, '0-1')).rejects.toThrow(/NOPERM/);
    await expect(
      client.eval("return redis.call('HGET', KEYS[1], 'x')", 1, replays),
    ).rejects.toThrow(/NOPERM/);
    await expect(client.xdel(routing.deadLetterKey, '0-1')).rejects.toThrow(/NOPERM/);
    // The incarnation marker (docs/protocol.md §13.6): a worker cannot fake a data loss.
    await expect(client.set(`${prefix}:{@m}:incarnation`, 'x')).rejects.toThrow(/NOPERM/);
    await expect(client.get(`${prefix}:{@m}:incarnation`)).rejects.toThrow(/NOPERM/);
    // Group state: neither written nor read.
    for (const part of ['meta', 'members', 'targets']) {
      await expect(client.hset(`${group}:${part}`, 'x', '1')).rejects.toThrow(/NOPERM/);
      await expect(client.hgetall(`${group}:${part}`)).rejects.toThrow(/NOPERM/);
    }
    await expect(client.zadd(`${group}:seen`, 0, 'x')).rejects.toThrow(/NOPERM/);
    await expect(client.xadd(`${group}:events`, '*', 'type', 'FAKE')).rejects.toThrow(/NOPERM/);
    // The catalog.
    await expect(client.hset(`${prefix}:{@m}:streams`, 'orders', '{}')).rejects.toThrow(/NOPERM/);
    await expect(client.sadd(`${prefix}:{@m}:groups`, 'x')).rejects.toThrow(/NOPERM/);
    await expect(client.incr(`${prefix}:{@m}:catalog-version`)).rejects.toThrow(/NOPERM/);
    // Nudges are the coordinator's to send; other prefixes and dangerous commands are out.
    await expect(client.publish(`${prefix}:nudge:billing`, 'x')).rejects.toThrow(/NOPERM/);
    await expect(client.xadd(`other:{orders:0}`, '*', 'k', 'v')).rejects.toThrow(/NOPERM/);
    await expect(client.flushall()).rejects.toThrow(/NOPERM/);
    await expect(client.keys('*')).rejects.toThrow(/NOPERM/);
    // The fence is still the coordinator's.
    const admin = connect(redis.adminUrl);
    expect(await admin.hget(meta, 'owner:billing')).not.toContain('intruder');
    expect(await admin.hget(meta, 'state')).toBe('open');
  });

  it('the producer user only appends: no reads of entries, no acks, no control plane', async () => {
    const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    const shardKey = routing.shards[0]?.key as string;
    const client = connect(redis.url('rsc-producer'));
    await expect(
      client.xreadgroup('GROUP', 'billing', 'thief', 'STREAMS', shardKey, '>'),
    ).rejects.toThrow(/NOPERM/);
    await expect(client.xack(shardKey, 'billing', '0-1')).rejects.toThrow(/NOPERM/);
    await expect(client.hset(`${shardKey}:meta`, 'state', 'open')).rejects.toThrow(/NOPERM/);
    await expect(client.hgetall(`${prefix}:{@g:billing}:members`)).rejects.toThrow(/NOPERM/);
    await expect(client.subscribe(`${prefix}:nudge:billing`)).rejects.toThrow(/NOPERM/);
  });

  it('no access without a password: the default user is off', async () => {
    const anonymous = connect(`redis://127.0.0.1:${redis.port}`);
    await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
    const wrong = connect(`redis://rsc-worker:wrong-password-123456@127.0.0.1:${redis.port}`);
    await expect(wrong.ping()).rejects.toThrow(/WRONGPASS/);
  });
});

describe('docker/redis/users-acl.sh (offline)', () => {
  it('docker/redis/users.acl is its output for KEY_PREFIX=rsc and the compose passwords', () => {
    const compose = loadCompose() as {
      'x-redis-passwords': Record<string, string>;
    };
    const fallback = (variable: string): string =>
      /:-([^}]*)\}$/.exec(compose['x-redis-passwords'][variable] ?? '')?.[1] ?? '';
    const rendered = renderUsersAcl('rsc', {
      'rsc-coordinator': fallback('REDIS_COORDINATOR_PASSWORD'),
      'rsc-worker': fallback('REDIS_WORKER_PASSWORD'),
      'rsc-producer': fallback('REDIS_PRODUCER_PASSWORD'),
    });
    expect(readFileSync(join(DOCKER_DIR, 'redis', 'users.acl'), 'utf8')).toBe(rendered);
    expect(rendered).toMatch(/^user default off /);
    expect(rendered).not.toContain('dev-redis');
  });

  it('refuses a bad KEY_PREFIX and short passwords', () => {
    const run = (env: Record<string, string>): string => {
      try {
        execFileSync('sh', [join(DOCKER_DIR, 'redis', 'users-acl.sh')], {
          env: { PATH: process.env.PATH, ...env },
          stdio: 'pipe',
        });
        return 'ok';
      } catch (error) {
        return String((error as { stderr?: Buffer }).stderr);
      }
    };
    const passwords = {
      REDIS_COORDINATOR_PASSWORD: 'c'.repeat(16),
      REDIS_WORKER_PASSWORD: 'w'.repeat(16),
      REDIS_PRODUCER_PASSWORD: 'p'.repeat(16),
    };
    expect(run({ ...passwords, KEY_PREFIX: 'rsc' })).toBe('ok');
    expect(run({ ...passwords, KEY_PREFIX: 'a*b' })).toMatch(/KEY_PREFIX/);
    expect(run({ ...passwords, KEY_PREFIX: 'rsc', REDIS_WORKER_PASSWORD: 'short' })).toMatch(
      /REDIS_WORKER_PASSWORD must be set to at least 16 characters/,
    );
    expect(
      run({
        ...passwords,
        KEY_PREFIX: 'rsc',
        REDIS_PRODUCER_PASSWORD: 'replace-me-producer-password',
      }),
    ).toMatch(/REDIS_PRODUCER_PASSWORD is still the shipped placeholder/);
  });
});

describe('docker/redis/start.sh', () => {
  it('writes the ACL file from the environment and starts Redis with it', async () => {
    const dir = createTempDir('redis-start');
    // The image's docker-entrypoint.sh, reduced to what start.sh relies on: run the command.
    writeFileSync(join(dir.path, 'docker-entrypoint.sh'), '#!/bin/sh\nexec "$@"\n');
    const wrapper = join(dir.path, 'redis-via-start-sh');
    writeFileSync(
      wrapper,
      [
        '#!/bin/sh',
        `PATH="${dir.path}:$PATH"`,
        'export KEY_PREFIX=rsc',
        `export REDIS_COORDINATOR_PASSWORD='${ACL_PASSWORDS['rsc-coordinator']}'`,
        `export REDIS_WORKER_PASSWORD='${ACL_PASSWORDS['rsc-worker']}'`,
        `export REDIS_PRODUCER_PASSWORD='${ACL_PASSWORDS['rsc-producer']}'`,
        `export REDIS_ACL_FILE='${join(dir.path, 'acl', 'users.acl')}'`,
        `exec sh '${join(DOCKER_DIR, 'redis', 'start.sh')}' redis-server "$@"`,
        '',
      ].join('\n'),
    );
    for (const file of ['docker-entrypoint.sh', 'redis-via-start-sh'])
      chmodSync(join(dir.path, file), 0o755);
    const port = await freePort();
    const worker = `redis://rsc-worker:${ACL_PASSWORDS['rsc-worker']}@127.0.0.1:${port}`;
    const server = await spawnRedisServer({
      port,
      dir: dir.path,
      binary: wrapper,
      probeUrl: worker,
      args: ['--save', '', '--appendonly', 'no'],
    });
    const clients = [worker, `redis://127.0.0.1:${port}`].map((url) => {
      const client = connectRedis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
      client.on('error', () => undefined);
      return client;
    });
    try {
      const [asWorker, anonymous] = clients as [Redis, Redis];
      expect(await asWorker.ping()).toBe('PONG');
      await expect(asWorker.hset('rsc:{@g:x}:meta', 'version', '1')).rejects.toThrow(/NOPERM/);
      await expect(anonymous.ping()).rejects.toThrow(/NOAUTH/);
      expect(readFileSync(join(dir.path, 'acl', 'users.acl'), 'utf8')).toBe(renderUsersAcl('rsc'));
    } finally {
      for (const client of clients) client.disconnect();
      await server.stop();
      dir.remove();
    }
  });
});
