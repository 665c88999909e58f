import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childVitestEnv, VITEST_CLI } from '../support/child-run.js';
import { isPortListening, waitForPortClosed } from '../support/free-port.js';
import {
  type ClusterNode,
  type RedisClusterHandle,
  startRedisCluster,
  startRestartableRedis,
  stopAllRedisProcesses,
} from '../support/redis-processes.js';
import { waitFor } from '../support/wait.js';
import { createTestRedis } from '../support/redis.js';
import { connectRedisCluster } from '../support/redis-client.js';

function client(url: string): Redis {
  const redis = createTestRedis({ url, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  return redis;
}

async function withClient<T>(url: string, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = client(url);
  try {
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

afterAll(() => stopAllRedisProcesses());

describe('startRestartableRedis', () => {
  it('keeps its data across a clean stop and restart on the same port', async () => {
    const redis = await startRestartableRedis();
    try {
      await withClient(redis.url, async (c) => {
        await c.set('durable', 'v1');
        const info = await c.info('persistence');
        expect(info).toContain('aof_enabled:1');
        expect(await c.call('CONFIG', 'GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
      });
      await redis.stop();
      expect(redis.running).toBe(false);
      expect(await isPortListening(redis.port)).toBe(false);
      await redis.restart();
      expect(redis.running).toBe(true);
      expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
      expect(await withClient(redis.url, (c) => c.get('durable'))).toBe('v1');
    } finally {
      await redis.dispose();
    }
    expect(await isPortListening(redis.port)).toBe(false);
    expect(existsSync(redis.dir)).toBe(false);
  });

  it('keeps acknowledged writes across a SIGKILL and restart', async () => {
    const redis = await startRestartableRedis();
    try {
      await withClient(redis.url, async (c) => {
        for (let i = 0; i < 50; i++) await c.xadd('crash:stream', '*', 'n', String(i));
        await c.set('crash:last', 'written-before-kill');
      });
      await redis.kill();
      expect(await isPortListening(redis.port)).toBe(false);
      await redis.restart();
      await withClient(redis.url, async (c) => {
        expect(await c.get('crash:last')).toBe('written-before-kill');
        expect(await c.xlen('crash:stream')).toBe(50);
      });
      // restart() of a running server stops it first and comes back with the same data
      await redis.restart();
      expect(await withClient(redis.url, (c) => c.xlen('crash:stream'))).toBe(50);
    } finally {
      await redis.dispose();
    }
    expect(await isPortListening(redis.port)).toBe(false);
    await expect(redis.restart()).rejects.toThrow(/was disposed/);
  });
});

describe('startRedisCluster', () => {
  let cluster: RedisClusterHandle;
  let clusterClient: Cluster;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    clusterClient = connectRedisCluster(cluster.nodes, {
      redisOptions: { maxRetriesPerRequest: 3 },
    });
  });

  afterAll(async () => {
    clusterClient?.disconnect();
    await cluster?.stop();
  });

  /** One key per master, in different slots. */
  async function keyPerNode(): Promise<Map<number, string>> {
    const byPort = new Map<number, string>();
    for (let i = 0; byPort.size < cluster.nodes.length; i++) {
      if (i > 1000) throw new Error('found no key for every master in 1000 tries');
      const key = `spread:${i}`;
      const owner = await cluster.ownerOf(key);
      if (!byPort.has(owner.port)) byPort.set(owner.port, key);
    }
    return byPort;
  }

  it('forms a 3-master cluster in state ok', async () => {
    expect(cluster.nodes).toHaveLength(3);
    expect(cluster.url).toBe(
      `redis+cluster://${cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    );
    for (const node of cluster.nodes) {
      const info = await withClient(`redis://${node.host}:${node.port}`, (c) =>
        c.call('CLUSTER', 'INFO'),
      );
      expect(String(info)).toContain('cluster_state:ok');
      expect(String(info)).toContain('cluster_size:3');
      expect(String(info)).toContain('cluster_slots_assigned:16384');
    }
  });

  it('serves keys in different slots on different masters through ioredis Cluster', async () => {
    const keys = await keyPerNode();
    expect(new Set(keys.keys()).size).toBe(3);
    for (const [port, key] of keys) {
      await clusterClient.set(key, `on-${port}`);
      expect(await clusterClient.get(key)).toBe(`on-${port}`);
      // the value really lives on that master
      expect(await withClient(`redis://127.0.0.1:${port}`, (c) => c.get(key))).toBe(`on-${port}`);
    }
  });

  it('migrateKeySlot moves the slot of one key to another master; the key stays readable', async () => {
    const key = 'orders:{order-42}';
    await clusterClient.set(key, 'before-migration');
    await clusterClient.xadd('orders:{order-42}:stream', '*', 'n', '1');
    const before = await cluster.ownerOf(key);

    const migration = await cluster.migrateKeySlot(key);
    expect(migration.from).toEqual(before);
    expect(migration.to.port).not.toBe(before.port);
    expect(migration.slot).toBe(
      Number(
        await withClient(`redis://127.0.0.1:${before.port}`, (c) =>
          c.call('CLUSTER', 'KEYSLOT', key),
        ),
      ),
    );
    expect(migration.keysMoved).toBe(2);
    expect(await cluster.ownerOf(key)).toEqual(migration.to);

    // the client follows MOVED; reads and writes keep working
    expect(await clusterClient.get(key)).toBe('before-migration');
    await clusterClient.set(key, 'after-migration');
    expect(await clusterClient.xlen('orders:{order-42}:stream')).toBe(1);
    expect(await withClient(`redis://127.0.0.1:${migration.to.port}`, (c) => c.get(key))).toBe(
      'after-migration',
    );
    await expect(withClient(`redis://127.0.0.1:${before.port}`, (c) => c.get(key))).rejects.toThrow(
      /MOVED/,
    );

    // and it can move on to a chosen node
    const third = cluster.nodes.find(
      (n: ClusterNode) => n.port !== before.port && n.port !== migration.to.port,
    ) as ClusterNode;
    const again = await cluster.migrateKeySlot(key, third);
    expect(again.to).toEqual(third);
    expect(await clusterClient.get(key)).toBe('after-migration');
    await expect(cluster.migrateKeySlot(key, third)).rejects.toThrow(/already on/);
  });

  it('stop() stops every node (client and bus ports closed) and removes its files', async () => {
    clusterClient.disconnect();
    await cluster.stop();
    for (const node of cluster.nodes) {
      expect(await isPortListening(node.port)).toBe(false);
      expect(await isPortListening(node.port + 10_000)).toBe(false);
    }
    expect(existsSync(cluster.dir)).toBe(false);
    await cluster.stop(); // idempotent
  });
});

describe('cleanup when a suite does not stop its Redis processes', () => {
  interface LeakReport {
    ports: number[];
    dirs: string[];
  }

  /** Runs the leaky fixture suite in a child Vitest. */
  function runFixture(mode: 'fail' | 'hang', reportFile: string) {
    const env = childVitestEnv({ LEAK_MODE: mode, LEAK_REPORT: reportFile });
    const child = spawn(
      process.execPath,
      [VITEST_CLI, 'run', '--config', 'test/workspace/fixtures/vitest.fixture.config.ts'],
      { cwd: process.cwd(), env, stdio: 'ignore' },
    );
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code, signal) => resolve(signal ? -1 : code)),
    );
    return { child, exited };
  }

  async function expectAllGone(report: LeakReport): Promise<void> {
    expect(report.ports).toHaveLength(4);
    for (const port of report.ports) await waitForPortClosed(port, '127.0.0.1', 10_000);
    for (const dir of report.dirs) expect(existsSync(dir)).toBe(false);
  }

  async function waitForFile(file: string, timeoutMs: number): Promise<string> {
    await waitFor(() => existsSync(file) && readFileSync(file, 'utf8') !== '', {
      timeoutMs,
      message: `${file} to appear`,
    });
    return readFileSync(file, 'utf8');
  }

  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'rsc-leak-'));
  });
  afterAll(() => rm(scratch, { recursive: true, force: true }));

  it('a failing test: the processes are killed and dirs removed when the worker exits', async () => {
    const file = join(scratch, 'fail.json');
    const { exited } = runFixture('fail', file);
    expect(await exited).toBe(1);
    await expectAllGone(JSON.parse(readFileSync(file, 'utf8')) as LeakReport);
  });

  it('the test runner SIGKILLed mid-test: the processes still go away', async () => {
    const file = join(scratch, 'hang.json');
    const { child, exited } = runFixture('hang', file);
    const report = JSON.parse(await waitForFile(file, 30_000)) as LeakReport;
    for (const port of report.ports) expect(await isPortListening(port)).toBe(true);
    child.kill('SIGKILL');
    expect(await exited).toBe(-1);
    await expectAllGone(report);
  });
});
