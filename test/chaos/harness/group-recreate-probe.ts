import type { Redis } from 'ioredis';
import type { HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace, ownerField, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, TEST_TOKENS } from '../../support/coordinator-process.js';
import { CHAOS_STREAM, type ChaosCluster } from './chaos-cluster.js';

/**
 * The `recreate-group` fault: a side group (never the checked one) is looked up through one
 * replica before it exists, created, used and deleted through the other, then joined through the
 * first again. The member of the new incarnation must be answered with every shard and the
 * data-plane fence of each must name it (a stale incarnation would leave it owning shards it
 * cannot read). Throws on any violation; resolves to a note. A probe that a Redis restart cut
 * through (a later fault of the schedule, while a loaded machine made the probe slow) proves
 * nothing either way: it is noted as skipped.
 */
export async function recreateGroupAcrossReplicas(
  cluster: ChaosCluster,
  group: string,
): Promise<string> {
  const [first, second] = cluster.replicas;
  if (!first.process?.running || !second.process?.running) {
    return 'skipped: a coordinator replica is down';
  }
  const redis = cluster.redisClient();
  const before = await redisRunId(redis).catch(() => null);
  try {
    return await probe(cluster, group);
  } catch (error) {
    const after = await redisRunId(redis).catch(() => null);
    if (after === before) throw error;
    const why = error instanceof Error ? error.message : String(error);
    return `skipped: Redis restarted during the probe (${why})`;
  }
}

/** The Redis server's run id (a new one after every restart). */
async function redisRunId(redis: Redis): Promise<string | null> {
  return /run_id:(\w+)/.exec(await redis.info('server'))?.[1] ?? null;
}

async function probe(cluster: ChaosCluster, group: string): Promise<string> {
  const [first, second] = cluster.replicas;
  const api = (port: number, token: string): CoordinatorApi =>
    new CoordinatorApi(`http://127.0.0.1:${port}`, token);
  const a = api(first.port, TEST_TOKENS.member);
  const b = api(second.port, TEST_TOKENS.member);
  const expect = async (
    what: string,
    status: number,
    call: Promise<{ status: number; body: unknown }>,
  ) => {
    const res = await call;
    if (res.status !== status) {
      throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)} (expected ${status})`);
    }
    return res.body;
  };
  const join = (memberId: string) => ({
    memberId,
    memberEpoch: 0,
    rebalanceTimeoutMs: 10_000,
    subscribedStreams: [CHAOS_STREAM],
    ownedShards: [],
  });
  const path = `/v1/groups/${group}`;

  await expect(`GET ${group} on A before it exists`, 404, a.get(path));
  await expect('join x on B', 200, b.post(`${path}/heartbeat`, join('x')));
  await expect(
    'leave x on B',
    200,
    b.post(`${path}/heartbeat`, { memberId: 'x', memberEpoch: -1 }),
  );
  await expect(`DELETE ${group} on B`, 204, api(second.port, TEST_TOKENS.admin).delete(path));
  const joined = (await expect(
    'join y on A',
    200,
    a.post(`${path}/heartbeat`, join('y')),
  )) as HeartbeatResponse;
  const shards = joined.assignment?.shards.find((e) => e.stream === CHAOS_STREAM)?.shards ?? [];
  if (shards.length === 0) throw new Error(`y was assigned nothing: ${JSON.stringify(joined)}`);
  const keys = new KeySpace(cluster.prefix);
  const redis = cluster.redisClient();
  for (const shard of shards) {
    const token = await redis.hget(
      shardMetaKey(keys.shardKey(CHAOS_STREAM, shard)),
      ownerField(group),
    );
    if (!token?.endsWith(':y')) {
      const evidence = await fenceEvidence(redis, keys, group, keys.shardKey(CHAOS_STREAM, shard));
      throw new Error(
        `shard ${shard} of the re-created ${group}: the fence names ${token}, not y (${evidence})`,
      );
    }
  }
  await expect(
    'leave y on A',
    200,
    a.post(`${path}/heartbeat`, { memberId: 'y', memberEpoch: -1 }),
  );
  await expect(`DELETE ${group} on A`, 204, api(first.port, TEST_TOKENS.admin).delete(path));
  return `the re-created group's fence names its member on ${shards.length} shard(s)`;
}

/** What a failed fence check saw: the shard's meta hash, the group's meta and its latest events. */
async function fenceEvidence(
  redis: Redis,
  keys: KeySpace,
  group: string,
  shardKey: string,
): Promise<string> {
  const [shardMeta, groupMeta, events] = await Promise.all([
    redis.hgetall(shardMetaKey(shardKey)),
    redis.hgetall(keys.groupMetaKey(group)),
    redis.xrevrange(keys.groupEventsKey(group), '+', '-', 'COUNT', 8),
  ]).catch((error: unknown) => [String(error), '', ''] as const);
  return `shard meta ${JSON.stringify(shardMeta)}; group meta ${JSON.stringify(groupMeta)}; latest events ${JSON.stringify(events)}`;
}
