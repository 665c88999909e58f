import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { HeartbeatResponse, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import {
  CoordinatorApi,
  CoordinatorProcess,
  COORDINATOR_MAIN,
  TEST_TOKENS,
} from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { onProcessExit } from '../support/process-cleanup.js';
import { cleanupPrefix, redisUrl, useRedisPrefix } from '../support/redis.js';
import { type ChildRun, runNode } from '../support/child-run.js';
import { joinRequest } from './support/coordinator-fixture.js';
import { pollUntil } from '../support/wait.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A valid environment; each case overrides one thing. */
function baseEnv(prefix: string, port: number): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    PORT: String(port),
    HOST: '127.0.0.1',
    REDIS_URL: redisUrl(),
    KEY_PREFIX: prefix,
    COORDINATOR_TOKEN: TEST_TOKENS.member,
    COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
    LOG_LEVEL: 'warn',
  };
}

/**
 * Runs the built coordinator with `env` and expects it to stop on its own; resolves its exit and
 * output. A bad value exits in about 1.5 s on an idle machine; the bound is generous because the
 * cases run concurrently beside the other e2e files on two cores (a loaded CI run took 15 s).
 */
function runToExit(env: NodeJS.ProcessEnv, timeoutMs = 45_000): Promise<ChildRun> {
  return runNode([COORDINATOR_MAIN], { env, timeoutMs });
}

interface BadEnvCase {
  readonly name: string;
  readonly env: Readonly<Record<string, string>>;
  /** Every one must appear in the output. */
  readonly mentions: readonly string[];
}

const BAD_ENV: BadEnvCase[] = [
  { name: 'PORT=abc', env: { PORT: 'abc' }, mentions: ['PORT', '"abc"'] },
  { name: 'PORT=70000', env: { PORT: '70000' }, mentions: ['PORT'] },
  {
    name: 'SESSION_TIMEOUT_MS < HEARTBEAT_INTERVAL_MS',
    env: { HEARTBEAT_INTERVAL_MS: '3000', SESSION_TIMEOUT_MS: '1000' },
    mentions: ['HEARTBEAT_INTERVAL_MS', 'SESSION_TIMEOUT_MS'],
  },
  {
    name: 'HEARTBEAT_INTERVAL_MS not a number',
    env: { HEARTBEAT_INTERVAL_MS: 'soon' },
    mentions: ['HEARTBEAT_INTERVAL_MS'],
  },
  { name: 'STREAMS=orders:0', env: { STREAMS: 'orders:0' }, mentions: ['STREAMS', 'orders:0'] },
  {
    name: 'STREAMS without a shard count',
    env: { STREAMS: 'orders' },
    mentions: ['STREAMS', 'orders'],
  },
  { name: 'STREAMS with an invalid name', env: { STREAMS: 'bad name:2' }, mentions: ['STREAMS'] },
  {
    name: 'STREAMS declaring a stream twice',
    env: { STREAMS: 'orders:2,orders:3' },
    mentions: ['STREAMS', 'orders'],
  },
  {
    name: 'no token without COORDINATOR_AUTH=none',
    env: { COORDINATOR_TOKEN: '', COORDINATOR_ADMIN_TOKEN: '' },
    mentions: ['COORDINATOR_TOKEN', 'COORDINATOR_AUTH=none'],
  },
  {
    name: 'a token shorter than 16 characters',
    env: { COORDINATOR_TOKEN: 'short-token' },
    mentions: ['COORDINATOR_TOKEN', '16'],
  },
  {
    name: 'a shipped placeholder token (docker/compose.yml)',
    env: { COORDINATOR_ADMIN_TOKEN: 'dev-admin-token' },
    mentions: ['COORDINATOR_ADMIN_TOKEN', 'placeholder', 'openssl rand -hex 32'],
  },
  {
    name: 'a shipped placeholder token (the Kubernetes secret)',
    env: { COORDINATOR_TOKEN: 'replace-me-member-token' },
    mentions: ['COORDINATOR_TOKEN', 'placeholder'],
  },
  {
    name: 'a short viewer or metrics token',
    env: { COORDINATOR_VIEWER_TOKEN: 'viewer', METRICS_TOKEN: 'scrape' },
    mentions: ['COORDINATOR_VIEWER_TOKEN', 'METRICS_TOKEN'],
  },
  {
    name: 'COORDINATOR_AUTH=none on every interface',
    env: { COORDINATOR_AUTH: 'none', HOST: '0.0.0.0' },
    mentions: ['COORDINATOR_AUTH=none', 'loopback', 'HOST'],
  },
  { name: 'MAX_GROUPS=0', env: { MAX_GROUPS: '0' }, mentions: ['MAX_GROUPS'] },
  {
    name: 'COORDINATOR_AUTH=maybe',
    env: { COORDINATOR_AUTH: 'maybe' },
    mentions: ['COORDINATOR_AUTH'],
  },
  { name: 'bad KEY_PREFIX', env: { KEY_PREFIX: 'my prefix!' }, mentions: ['KEY_PREFIX'] },
  {
    name: 'KEY_PREFIX over 64 chars',
    env: { KEY_PREFIX: 'k'.repeat(65) },
    mentions: ['KEY_PREFIX'],
  },
  {
    name: 'unknown DEFAULT_ASSIGNOR',
    env: { DEFAULT_ASSIGNOR: 'magic' },
    mentions: ['DEFAULT_ASSIGNOR', 'magic'],
  },
  { name: 'GROUP_MAX_SIZE=0', env: { GROUP_MAX_SIZE: '0' }, mentions: ['GROUP_MAX_SIZE'] },
  { name: 'MAX_SHARDS too large', env: { MAX_SHARDS: '100000' }, mentions: ['MAX_SHARDS'] },
  { name: 'LOG_LEVEL=loud', env: { LOG_LEVEL: 'loud' }, mentions: ['LOG_LEVEL'] },
  {
    name: 'LOG_FORMAT=yaml',
    env: { LOG_FORMAT: 'yaml' },
    mentions: ['LOG_FORMAT', 'text or json'],
  },
  {
    name: 'REDIS_URL with an unsupported scheme',
    env: { REDIS_URL: 'ftp://127.0.0.1:6379' },
    mentions: ['REDIS_URL'],
  },
];

describe('coordinator configuration (environment only)', () => {
  const redis = useRedisPrefix('config');
  // Each coordinator here gets its own sub-prefix; the hook of useRedisPrefix only covers its own.
  const sub = (name: string): string => `${redis.prefix}-${name}`;
  afterAll(async () => {
    for (const name of ['bad', 'open', 'streams', 'npm'])
      await cleanupPrefix(redis.redis(), sub(name));
  });

  describe.concurrent('bad values stop the process with a message naming the variable', () => {
    for (const c of BAD_ENV) {
      it(c.name, async () => {
        const env = { ...baseEnv(sub('bad'), await freePort()), ...c.env };
        const { code, output, ms } = await runToExit(env);
        expect(code, output).not.toBe(0);
        expect(code, output).not.toBeNull();
        for (const m of c.mentions) expect(output).toContain(m);
        expect(output).toContain('invalid coordinator configuration');
        // A configuration error is reported, not a crash: no stack trace.
        expect(output).not.toMatch(/\n\s+at .+:\d+:\d+/);
        expect(ms).toBeLessThan(30_000); // promptly: no wait for Redis, no retry loop
      });
    }
  });

  it('COORDINATOR_AUTH=none starts with a warning and accepts unauthenticated calls', async () => {
    const coordinator = await CoordinatorProcess.start({
      prefix: sub('open'),
      env: { COORDINATOR_AUTH: 'none', COORDINATOR_TOKEN: '', COORDINATOR_ADMIN_TOKEN: '' },
    });
    try {
      expect(coordinator.output()).toMatch(/WARN.*COORDINATOR_AUTH=none/);
      const anonymous = new CoordinatorApi(coordinator.url, null);
      expect((await anonymous.put('/v1/streams/open-stream', { shards: 2 })).status).toBe(201);
      const join = await anonymous.post<HeartbeatResponse>(
        '/v1/groups/g/heartbeat',
        joinRequest('a', ['open-stream']),
      );
      expect(join.status).toBe(200);
      expect(join.body.assignment?.shards[0]?.shards).toEqual([0, 1]);
      expect((await anonymous.get('/v1/groups/g')).status).toBe(200);
      expect((await anonymous.delete('/v1/groups/g/members/a')).status).toBe(204);
    } finally {
      await coordinator.stop();
    }
  });

  it('STREAMS declares streams at start (an existing stream keeps its shard count); defaults apply', async () => {
    const coordinator = await CoordinatorProcess.start({
      prefix: sub('streams'),
      env: { STREAMS: 'orders:8, payments:4' },
    });
    try {
      const api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
      const orders = await api.get<StreamRouting>('/v1/streams/orders');
      expect(orders.status).toBe(200);
      expect(orders.body.shards.map((s) => s.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect((await api.get<StreamRouting>('/v1/streams/payments')).body.shards).toHaveLength(4);
      const join = await api.post<HeartbeatResponse>(
        '/v1/groups/g/heartbeat',
        joinRequest('a', ['orders']),
      );
      expect({
        heartbeatIntervalMs: join.body.heartbeatIntervalMs,
        sessionTimeoutMs: join.body.sessionTimeoutMs,
      }).toEqual({
        heartbeatIntervalMs: 3000,
        sessionTimeoutMs: 15000,
      });
    } finally {
      await coordinator.stop();
    }
    const again = await CoordinatorProcess.start({
      prefix: sub('streams'),
      env: { STREAMS: 'orders:3' },
    });
    try {
      const orders = await new CoordinatorApi(again.url, TEST_TOKENS.member).get<StreamRouting>(
        '/v1/streams/orders',
      );
      expect(orders.body.shards).toHaveLength(8);
      expect(again.output()).toContain('STREAMS declares orders:3');
    } finally {
      await again.stop();
    }
  });

  it('`npm run start:coordinator` runs the built coordinator with the environment alone', async () => {
    const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts['start:coordinator']).toBe('node apps/coordinator/dist/main.js');
    const port = await freePort();
    const prefix = sub('npm');
    const child = spawn('npm', ['run', '--silent', 'start:coordinator'], {
      cwd: ROOT,
      env: { ...baseEnv(prefix, port), STREAMS: 'npm-stream:3' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const pgid = child.pid as number;
    const unregister = onProcessExit(() => process.kill(-pgid, 'SIGKILL'));
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const api = new CoordinatorApi(`http://127.0.0.1:${port}`, TEST_TOKENS.member);
      await pollUntil(
        () => api.get('/health/ready').catch(() => ({ status: 0 })),
        (r) => r.status === 200,
        {
          timeoutMs: 20_000,
          intervalMs: 100,
          message: `npm run start:coordinator to be ready (output: ${output})`,
        },
      );
      const routing = await api.get<StreamRouting>('/v1/streams/npm-stream');
      expect(routing.body.shards.map((s) => s.key)).toEqual(
        [0, 1, 2].map((i) => `${prefix}:{npm-stream:${i}}`),
      );
    } finally {
      process.kill(-pgid, 'SIGTERM');
      const timer = setTimeout(() => process.kill(-pgid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
      unregister();
    }
  });
});
