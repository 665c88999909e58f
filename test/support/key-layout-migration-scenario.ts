import { resolve } from 'node:path';
import { expect } from 'vitest';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import {
  type DescribedGroup,
  KeySpace,
  shardMetaKey,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  allEvents,
  heartbeat,
  joinRequest,
  ok,
} from '../coordinator/support/coordinator-fixture.js';
import { runNode } from './child-run.js';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from './coordinator-process.js';
import { repoRoot } from './service-process.js';
import { waitForNoProblems } from './wait.js';

const MIGRATE_MAIN = resolve(repoRoot(), 'apps/coordinator/dist/key-layout/migrate-keys-main.js');

/** Runs the built migration tool; resolves its exit code and output. */
export async function runMigrateKeys(
  redisUrl: string,
  prefix: string,
): Promise<{ code: number; output: string }> {
  const run = await runNode([MIGRATE_MAIN], {
    env: { PATH: process.env.PATH, REDIS_URL: redisUrl, KEY_PREFIX: prefix },
    timeoutMs: 30_000,
  });
  return { code: run.code ?? -1, output: run.stdout + run.stderr };
}

/** Every key matching `pattern` (on every master of a cluster), sorted. */
export async function keysMatching(redis: RedisConnection, pattern: string): Promise<string[]> {
  const nodes = 'nodes' in redis ? redis.nodes('master') : [redis];
  const out: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      out.push(...batch);
    } while (cursor !== '0');
  }
  return out.sort();
}

/** Groups of the old layout whose last answered heartbeat (Redis time) is younger than `ms`. */
async function heartbeatsYoungerThan(
  redis: RedisConnection,
  prefix: string,
  ms: number,
): Promise<string[]> {
  const [seconds] = await redis.time();
  const now = Number(seconds) * 1000;
  const young: string[] = [];
  for (const key of await keysMatching(redis, `${prefix}:{g:*}:seen`)) {
    const [, last] = await redis.zrevrange(key, 0, 0, 'WITHSCORES');
    if (last !== undefined && now - Number(last) < ms) young.push(`${key} at ${last}`);
  }
  return young;
}

/**
 * Puts the control plane back into the old key layout, exactly as a coordinator before the fix
 * left it: `{@g:<group>}` → `{g:<group>}`, `{@m}` → `{m}` (DUMP/RESTORE: on a cluster the names
 * are in other slots). The meta hash of group `<n>` and the meta hash of shard `<n>` of stream
 * `g` were one hash then, so those are merged into one.
 */
export async function toLegacyLayout(redis: RedisConnection, prefix: string): Promise<void> {
  for (const key of await keysMatching(redis, `${prefix}:{@*`)) {
    if (key.endsWith(':{@m}:incarnation')) {
      await redis.del(key); // no coordinator of the old layout wrote an incarnation marker
      continue;
    }
    const legacy = key.replace(`${prefix}:{@g:`, `${prefix}:{g:`).replace('{@m}', '{m}');
    const shared = /^[^:]+:\{g:\d+\}:meta$/.test(legacy) && (await redis.exists(legacy)) > 0;
    if (shared) {
      await redis.hset(legacy, await redis.hgetall(key));
    } else {
      const dump = await redis.dumpBuffer(key);
      if (dump === null) throw new Error(`${key} vanished`);
      await redis.restore(legacy, 0, dump);
    }
    await redis.del(key);
  }
}

/**
 * The whole move of a deployment, on the Redis at `redisUrl`: real state made by the built
 * coordinator (groups "0" on stream `g`, so its meta hash is shard 0's, "1" deleted under the old
 * layout so shard 1 of `g` lost its state, and "shop"), put back into the old layout; the new
 * coordinator refuses to start; migrate-keys refuses while an old coordinator answers probes (or answered heartbeats in the last 10 s),
 * then moves, splits and repairs, and a second run moves nothing; the restarted coordinator
 * serves exactly the state it had, and the group commits on it.
 */
export async function runKeyLayoutMigrationScenario(
  redisUrl: string,
  redis: RedisConnection,
  prefix: string,
): Promise<void> {
  const keys = new KeySpace(prefix);
  let coordinator: CoordinatorProcess | undefined;
  const start = async (): Promise<CoordinatorApi> => {
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl,
      env: { STREAMS: 'g:3,orders:2', SESSION_TIMEOUT_MS: '300000' },
      readyTimeoutMs: 40_000, // a shared machine under load; the refusal exits at once anyway
    });
    return new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  };
  const stop = async (): Promise<void> => {
    await coordinator?.stop();
    coordinator = undefined;
  };
  try {
    let api = await start();
    const admin = new CoordinatorApi(coordinator?.url ?? '', TEST_TOKENS.admin);
    const zero = await ok(api, '0', joinRequest('z', ['g', 'orders']));
    await ok(api, 'shop', joinRequest('s', ['orders']));
    await ok(api, '1', joinRequest('o', ['orders']));
    await heartbeat(api, '1', { memberId: 'o', memberEpoch: -1 });
    expect((await admin.delete('/v1/groups/1')).status).toBe(204);
    const groups = ['0', 'shop'];
    const described = new Map<string, DescribedGroup>();
    const events = new Map<string, unknown>();
    for (const g of groups) {
      described.set(g, (await api.get<DescribedGroup>(`/v1/groups/${g}`)).body);
      events.set(g, await allEvents(api, g));
    }
    const routing = (await api.get<{ streams: StreamRouting[] }>('/v1/streams')).body;
    const streamLog = await redis.xrange(keys.streamEventsKey('g'), '-', '+');
    const shard0Meta = shardMetaKey(keys.shardKey('g', 0));
    const shard1Meta = shardMetaKey(keys.shardKey('g', 1));
    const shard0Fields = await redis.hgetall(shard0Meta);
    expect(shard0Fields).toMatchObject({ state: 'open', 'owner:0': expect.any(String) });
    await stop();

    await toLegacyLayout(redis, prefix);
    await redis.del(shard1Meta); // what deleting group "1" did under the old layout
    expect(await redis.hget(shard0Meta, 'groupEpoch')).toBe(String(described.get('0')?.groupEpoch));
    expect(await keysMatching(redis, `${prefix}:{@*`)).toEqual([]);

    // The new coordinator refuses to start, and writes nothing.
    await expect(start()).rejects.toThrow(/old key layout[\s\S]*migrate-keys/);
    coordinator = undefined;
    expect(await keysMatching(redis, `${prefix}:{@*`)).toEqual([]);

    // The tool refuses while a coordinator of the old layout answers readiness probes.
    // (A long TTL: the tool starting on a loaded machine must still find it.)
    await redis.set(`${prefix}:{m}:health`, '1', 'PX', 120_000);
    const busy = await runMigrateKeys(redisUrl, prefix);
    expect(busy.code, busy.output).toBe(1);
    expect(busy.output).toContain('stop every coordinator replica');
    await redis.del(`${prefix}:{m}:health`);

    // It also refuses while the old layout shows a heartbeat answered in the last 10 s (the
    // coordinator above answered some moments ago): wait as the procedure says.
    await waitForNoProblems(() => heartbeatsYoungerThan(redis, prefix, 10_000), {
      timeoutMs: 30_000,
      intervalMs: 250,
      message: 'the last heartbeat answered under the old layout is 10 s old',
      retryErrors: true,
    });
    const run = await runMigrateKeys(redisUrl, prefix);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toContain(`split 1 shared meta hash(es): ${prefix}:{g:0}:meta`);
    expect(run.output).toContain(`repaired 1 shard meta hash(es): ${shard1Meta}`);
    expect(await keysMatching(redis, `${prefix}:{m}*`)).toEqual([]);
    const leftInG = await keysMatching(redis, `${prefix}:{g:*`);
    expect(leftInG.filter((k) => !/^[^:]+:\{g:\d+\}/.test(k))).toEqual([]);
    expect(await redis.hgetall(shard0Meta)).toEqual(shard0Fields);
    const again = await runMigrateKeys(redisUrl, prefix);
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain('nothing to migrate');
    expect(again.output).toContain('moved 0 key(s); split 0');

    // Everything is where the coordinator looks for it, exactly as before.
    api = await start();
    for (const g of groups) {
      expect((await api.get<DescribedGroup>(`/v1/groups/${g}`)).body).toEqual(described.get(g));
      expect(await allEvents(api, g)).toEqual(events.get(g));
    }
    expect((await api.get('/v1/groups/1')).status).toBe(404);
    expect((await api.get<{ streams: StreamRouting[] }>('/v1/streams')).body).toEqual(routing);
    expect(await redis.xrange(keys.streamEventsKey('g'), '-', '+')).toEqual(streamLog);
    expect(await redis.hget(shard1Meta, 'state')).toBe('open');
    // The member carries on at its epoch; the group's next change commits on the moved state.
    const owned = (zero.assignment?.shards ?? []).map(({ stream, shards }) => ({ stream, shards }));
    const next = await ok(api, '0', {
      memberId: 'z',
      memberEpoch: zero.memberEpoch,
      ownedShards: owned,
    });
    expect(next.memberEpoch).toBe(zero.memberEpoch);
    await ok(api, '0', joinRequest('y', ['g']));
    expect((await api.get<DescribedGroup>('/v1/groups/0')).body.groupEpoch).toBe(
      (described.get('0')?.groupEpoch ?? 0) + 1,
    );
  } finally {
    await stop();
  }
}
