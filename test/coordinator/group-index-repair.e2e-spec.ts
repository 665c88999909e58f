import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import type { HeartbeatRequest } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { type RedisClusterHandle, startRedisCluster } from '../support/redis-cluster.js';
import { type RedisServerProcess, spawnRedisServer } from '../support/redis-server-process.js';
import { createTempDir, type TempDir } from '../support/temp-dir.js';
import { uniquePrefix, createTestRedis } from '../support/redis.js';
import { allEvents } from './support/member-fleet.js';
import { waitForNoProblems } from '../support/wait.js';
import { connectRedisCluster } from '../support/redis-client.js';

const SESSION_TIMEOUT_MS = 1000;
const REPAIR_MS = 200;

const join = (memberId: string): HeartbeatRequest => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs: 10_000,
  subscribedStreams: ['orders'],
  ownedShards: [],
});

/** The Redis a scenario runs against: one server of its own, or a three-master cluster. */
interface Backend {
  readonly url: string;
  readonly client: Redis | Cluster;
  stop(): Promise<void>;
}

async function singleServer(): Promise<Backend> {
  const dir: TempDir = createTempDir('index-repair');
  const server: RedisServerProcess = await spawnRedisServer({
    port: await freePort(),
    dir: dir.path,
  });
  const client = createTestRedis({ url: server.url });
  return {
    url: server.url,
    client,
    stop: async () => {
      client.disconnect();
      await server.stop();
      dir.remove();
    },
  };
}

async function cluster(): Promise<Backend> {
  const handle: RedisClusterHandle = await startRedisCluster();
  const client = connectRedisCluster(handle.nodes);
  return {
    url: handle.url,
    client,
    stop: async () => {
      client.disconnect();
      await handle.stop();
    },
  };
}

/**
 * The index of groups is repaired even for a group no replica has cached (no request reaches it):
 * the timers SCAN the group meta hashes (every master of a cluster), index every live group the
 * index lacks, then expire its silent members as usual. A deleted group's tombstone (a meta hash
 * holding only `incarnationFloor`) is not indexed.
 */
describe.each([
  ['a single Redis', singleServer],
  ['Redis Cluster', cluster],
])('index repair by SCAN on %s', (_label, startBackend) => {
  const prefix = uniquePrefix('index-repair');
  const keys = new KeySpace(prefix);
  const lost = ['g-lost-a', 'g-lost-b', 'g-lost-c', 'g-lost-d'];
  let backend: Backend;
  let coordinator: CoordinatorProcess | null = null;

  const start = async (): Promise<CoordinatorApi> => {
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: backend.url,
      env: {
        STREAMS: 'orders:2',
        HEARTBEAT_INTERVAL_MS: '100',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
        GROUP_INDEX_REPAIR_MS: String(REPAIR_MS),
      },
      readyTimeoutMs: 30_000,
    });
    return new CoordinatorApi(coordinator.url, TEST_TOKENS.admin);
  };

  beforeAll(async () => {
    backend = await startBackend();
  }, 60_000);
  afterAll(async () => {
    await coordinator?.stop();
    await backend?.stop();
  });

  it('indexes a live group no replica has cached and expires its members; not a tombstone', async () => {
    let api = await start();
    for (const group of lost) {
      expect((await api.post(`/v1/groups/${group}/heartbeat`, join('silent'))).status).toBe(200);
    }
    // A deleted group: its meta hash keeps only incarnationFloor.
    expect((await api.post('/v1/groups/g-dead/heartbeat', join('x'))).status).toBe(200);
    expect(
      (await api.post('/v1/groups/g-dead/heartbeat', { memberId: 'x', memberEpoch: -1 })).status,
    ).toBe(200);
    expect((await api.delete('/v1/groups/g-dead')).status).toBeLessThan(300);
    expect(await backend.client.hkeys(keys.groupMetaKey('g-dead'))).toEqual(['incarnationFloor']);

    // No replica has them cached any more; then the index loses them (a crash between a
    // group's commit and its index write).
    await coordinator?.stop();
    coordinator = null;
    await backend.client.srem(keys.groupsIndexKey(), ...lost);
    api = await start();

    await waitForNoProblems(
      async () => {
        const indexed = await backend.client.smembers(keys.groupsIndexKey());
        return lost.filter((g) => !indexed.includes(g)).map((g) => `${g} not indexed`);
      },
      {
        timeoutMs: REPAIR_MS * 2 + 10_000,
        message: 'the lost groups indexed again',
        retryErrors: true,
      },
    );
    // Each pass sweeps this small key space whole: the tombstone was looked at too, and never
    // indexed (the timers would drop it again at once, so the log is what shows it).
    // (the log line follows the index write through the child's pipe: await it)
    const log = (): string => coordinator?.output() ?? '';
    await waitForNoProblems(
      () =>
        lost
          .filter((g) => !log().includes(`group ${g} exists but was not in the index`))
          .map((g) => `no repair log line for ${g}`),
      { timeoutMs: 10_000, message: 'the repair logged each group it indexed' },
    );
    expect(log()).not.toContain('group g-dead exists');
    expect(await backend.client.sismember(keys.groupsIndexKey(), 'g-dead')).toBe(0);

    await waitForNoProblems(
      async () => {
        const problems: string[] = [];
        for (const group of lost) {
          const expired = (await allEvents(api, group)).filter((e) => e.type === 'MEMBER_EXPIRED');
          if (expired.length === 0) problems.push(`${group}: member not expired`);
        }
        return problems;
      },
      {
        timeoutMs: SESSION_TIMEOUT_MS * 10,
        message: 'the silent members of the lost groups expired',
        retryErrors: true,
      },
    );
    expect(await backend.client.sismember(keys.groupsIndexKey(), 'g-dead')).toBe(0);
    expect(log()).not.toContain('group g-dead exists');
  }, 90_000);
});
