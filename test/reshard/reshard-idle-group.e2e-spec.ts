import {
  KeySpace,
  type ProtocolErrorBody,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { snapshotKeys } from '../coordinator/support/coordinator-fixture.js';
import { TestMember } from '../coordinator/support/test-member.js';
import { checkHandled } from '../support/handled-records.js';
import {
  diagnoseCluster,
  groupEvents,
  reshard,
  routingOf,
  streamEvents,
  useReshardCluster,
  useReshardCoordinator,
  waitHandled,
  waitReshardDone,
} from './support/reshard-cluster.js';
import { waitForNoProblems } from '../support/wait.js';

/** Polls the stream's event log until one of `types` is there; returns the events then. */
async function waitForEvent(
  redis: Parameters<typeof streamEvents>[0],
  prefix: string,
  stream: string,
  types: readonly string[],
): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  let events: Array<{ type: string; data: Record<string, unknown> }> = [];
  await waitForNoProblems(
    async () => {
      events = await streamEvents(redis, prefix, stream);
      return events.some((e) => types.includes(e.type)) ? [] : [events.map((e) => e.type).join()];
    },
    {
      timeoutMs: 30_000,
      message: `one of ${types.join(', ')} in the event log of ${stream}`,
      retryErrors: true,
    },
  );
  return events;
}

/**
 * A consumer group that scales to zero (or runs as a nightly job) has no member while a reshard
 * runs. Its backlog in the old shards is its data: the change finishes for producers and active
 * groups, but an old shard is deleted only once every group that reads it drained it, or an admin
 * abandons that group. Real coordinator and example-worker processes; the group is idle well past
 * RESHARD_IDLE_GROUP_GRACE_MS (which now only logs RESHARD_GROUP_IDLE).
 */
describe('reshard: a group with no member keeps its backlog', () => {
  const c = useReshardCluster('reshard-idle-group', {
    shards: 4,
    workers: 1,
    env: { RESHARD_IDLE_GROUP_GRACE_MS: '300' },
  });

  it('its old shards are kept; it comes back, reads them first and gets every message in per-key order', async () => {
    const api = c.admin();
    const load = c.load(150, 60);
    await load.start();
    await waitHandled(c.files, 150, 60_000);
    // The group scales to zero; the producers go on.
    const [worker] = c.workers;
    await worker?.stop();
    await waitForNoProblems(
      async () => {
        const g = await api.get<{ members: unknown[] }>(`/v1/groups/${c.group}`);
        return g.body.members.length === 0 ? [] : [`${g.body.members.length} member(s)`];
      },
      { timeoutMs: 30_000, message: 'the group has no member', retryErrors: true },
    );
    await load.burst(600);
    // Relaxed for the producers and active groups; an idle group still gets per-key order.
    const accepted = await reshard(api, c.stream, 2, 'relaxed');
    expect(accepted.resharding?.groups).toEqual([c.group]);

    const events = await waitForEvent(c.redis(), c.prefix, c.stream, [
      'RESHARD_GROUP_IDLE',
      'RESHARD_GROUP_ABANDONED',
    ]);
    expect(events.filter((e) => e.type === 'RESHARD_GROUP_ABANDONED')).toEqual([]);
    const idle = events.find((e) => e.type === 'RESHARD_GROUP_IDLE');
    expect(idle?.data).toMatchObject({ group: c.group, shards: [0, 1, 2, 3] });
    // Past the notice (where it used to be abandoned and its shards deleted): all kept.
    const status = (await routingOf(api, c.stream)).resharding;
    expect(status?.state).toBe('draining');
    expect(status?.idleGroups.map((g) => g.group)).toEqual([c.group]);
    expect(status?.abandonedGroups).toEqual([]);
    let backlog = 0;
    for (const d of status?.drain ?? []) {
      expect(d, `old shard ${d.shard}`).toMatchObject({ removed: false, pendingGroups: [c.group] });
      backlog += await c.redis().xlen(d.key);
    }
    expect(backlog).toBeGreaterThan(600);

    // The group comes back: it reads its old shards first, then the new ones.
    await c.addWorker();
    const final = await waitReshardDone(api, c.stream, 90_000);
    expect(final.shards.map((s) => s.id)).toEqual([4, 5]);
    await load.stop();
    expect(load.errors.map((e) => e.message)).toEqual([]);
    await waitHandled(c.files, load.sent, 90_000, () => diagnoseCluster(c));
    const check = checkHandled(c.files, new Map(load.seqs));
    expect(check.missing, check.missingSample.join(', ')).toBe(0);
    expect(check.orderViolations).toEqual([]);
    for (let id = 0; id < 4; id++)
      expect(await c.redis().exists(`${c.prefix}:{orders:${id}}`)).toBe(0);
    const log = await groupEvents(api, c.group);
    expect(log.some((e) => e.type === 'RESHARD_GROUP_IDLE')).toBe(true);
  });
});

describe('POST /v1/streams/{stream}/groups/{groupId}/abandon', () => {
  const fx = useReshardCoordinator('reshard-abandon', { STREAMS: 'orders:2,calm:2' });
  const shardKey = (stream: string, id: number): string => `${fx.prefix}:{${stream}:${id}}`;

  it('validates, changes nothing on a refusal, then lets the deletion of an idle group’s shards proceed', async () => {
    const api = fx.admin();
    const sleepy = new TestMember(fx.member(), 'sleepy', 's1', ['orders']);
    await sleepy.join();
    await fx.member().post('/v1/groups/sleepy/leave', { memberId: 's1' });
    const other = new TestMember(fx.member(), 'other', 'o1', ['calm']);
    await other.join();
    await fx.redis().xadd(shardKey('orders', 0), '*', 'key', 'k', 'payload', '{}');
    await fx.redis().xgroup('CREATE', shardKey('orders', 0), 'sleepy', '0');
    await reshard(api, 'orders', 3);
    await waitForNoProblems(
      async () => {
        const s = (await routingOf(api, 'orders')).resharding;
        const left = s?.drain.filter((d) => !d.removed).map((d) => d.shard);
        return left?.join() === '0' && s?.idleGroups.length === 1 ? [] : [JSON.stringify(s)];
      },
      {
        timeoutMs: 30_000,
        message: 'only shard 0 is left, waiting for the idle group',
        retryErrors: true,
      },
    );
    // …and until the driver has copied its steps into the group's event log (a write of its own,
    // which must not land between the snapshot and the check below).
    await waitForNoProblems(
      async () => {
        const raw = await fx.redis().hget(new KeySpace(fx.prefix).streamsKey(), 'orders');
        const log = (JSON.parse(raw ?? '{}') as { resharding?: { log?: unknown[] } }).resharding
          ?.log;
        return log?.length === 0 ? [] : [JSON.stringify(log)];
      },
      { timeoutMs: 30_000, message: 'the reshard log is mirrored', retryErrors: true },
    );

    const before = await snapshotKeys(fx.redis(), fx.prefix);
    for (const [path, token, status, code, mention] of [
      ['/v1/streams/orders/groups/sleepy/abandon', 'member', 403, 'FORBIDDEN', 'admin'],
      ['/v1/streams/bad%20name/groups/sleepy/abandon', 'admin', 400, 'INVALID_REQUEST', 'stream'],
      ['/v1/streams/orders/groups/bad%20name/abandon', 'admin', 400, 'INVALID_REQUEST', 'groupId'],
      ['/v1/streams/nope/groups/sleepy/abandon', 'admin', 404, 'STREAM_NOT_FOUND', 'nope'],
      ['/v1/streams/calm/groups/other/abandon', 'admin', 404, 'NOT_FOUND', 'no reshard'],
      ['/v1/streams/orders/groups/other/abandon', 'admin', 404, 'NOT_FOUND', 'does not track'],
      ['/v1/streams/orders/groups/ghost/abandon', 'admin', 404, 'NOT_FOUND', 'does not track'],
    ] as const) {
      const client = token === 'admin' ? api : fx.member();
      const res = await client.post<ProtocolErrorBody>(path, {});
      expect([path, res.status, res.body.error?.code]).toEqual([path, status, code]);
      expect(res.body.error.message).toContain(mention);
    }
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);

    const res = await api.post<StreamRouting>('/v1/streams/orders/groups/sleepy/abandon', {});
    expect(res.status).toBe(200);
    expect(res.body.resharding?.abandonedGroups ?? []).toMatchObject([
      { group: 'sleepy', reason: 'admin' },
    ]);
    const done = await waitReshardDone(api, 'orders', 30_000);
    expect(done.shards.map((s) => s.id)).toEqual([2, 3, 4]);
    expect(await fx.redis().exists(shardKey('orders', 0), `${shardKey('orders', 0)}:meta`)).toBe(0);
    const abandoned = (await streamEvents(fx.redis(), fx.prefix, 'orders')).filter(
      (e) => e.type === 'RESHARD_GROUP_ABANDONED',
    );
    expect(abandoned.map((e) => e.data)).toEqual([
      { stream: 'orders', group: 'sleepy', reason: 'admin', shards: [0] },
    ]);
    expect(
      (await groupEvents(api, 'sleepy')).filter((e) => e.type === 'RESHARD_GROUP_ABANDONED'),
    ).toHaveLength(1);
    // Nothing to abandon any more.
    const late = await api.post<ProtocolErrorBody>('/v1/streams/orders/groups/sleepy/abandon', {});
    expect([late.status, late.body.error.code]).toEqual([404, 'NOT_FOUND']);
  });

  it('refuses to abandon a group that has a subscribed member, and changes nothing', async () => {
    // A typo or a stale runbook must not delete what a consuming group is still reading.
    const api = fx.admin();
    const busy = new TestMember(fx.member(), 'busy', 'b1', ['calm']);
    await busy.join();
    await fx.redis().xadd(shardKey('calm', 0), '*', 'key', 'k', 'payload', '{}');
    await reshard(api, 'calm', 3);
    await waitForNoProblems(
      async () => {
        const s = (await routingOf(api, 'calm')).resharding;
        return s?.state === 'draining' && s.groups.includes('busy') ? [] : [JSON.stringify(s)];
      },
      {
        timeoutMs: 30_000,
        message: 'the calm reshard is draining and waits for busy',
        retryErrors: true,
      },
    );
    await busy.beat();
    const res = await api.post<ProtocolErrorBody>('/v1/streams/calm/groups/busy/abandon', {});
    expect([res.status, res.body.error?.code]).toEqual([409, 'GROUP_NOT_EMPTY']);
    expect(res.body.error.message).toContain('Stop its members');
    // Nothing changed: still waited for, its backlog kept, nothing logged as abandoned. (The
    // drain loop keeps writing the record, so a whole-keyspace snapshot would race it.)
    expect((await routingOf(api, 'calm')).resharding?.abandonedGroups).toEqual([]);
    expect(await fx.redis().xlen(shardKey('calm', 0))).toBe(1);
    const events = await streamEvents(fx.redis(), fx.prefix, 'calm');
    expect(events.filter((e) => e.type === 'RESHARD_GROUP_ABANDONED')).toEqual([]);
  });
});

describe('a tracked group deleted and re-created under the same id during a reshard', () => {
  const fx = useReshardCoordinator('reshard-recreated', { STREAMS: 'orders:2' });
  const shard0 = (): string => `${fx.prefix}:{orders:0}`;

  it('is tracked again, so the old shard it still has backlog in is not deleted under it', async () => {
    // DELETE /v1/groups keeps the Redis consumer groups: the re-created group resumes them.
    const api = fx.admin();
    for (const g of ['g', 'keeper']) {
      const m = new TestMember(fx.member(), g, `${g}-1`, ['orders']);
      await m.join();
      await fx.member().post(`/v1/groups/${g}/leave`, { memberId: `${g}-1` });
    }
    await fx.redis().xadd(shard0(), '*', 'key', 'k', 'payload', '{}');
    // `keeper` (idle, with backlog) keeps shard 0 alive whatever happens to `g`.
    for (const g of ['g', 'keeper']) await fx.redis().xgroup('CREATE', shard0(), g, '0');
    await reshard(api, 'orders', 3);
    await waitForNoProblems(
      async () => {
        const s = (await routingOf(api, 'orders')).resharding;
        return s?.state === 'draining' && s.groups.join() === 'g,keeper' ? [] : [JSON.stringify(s)];
      },
      { timeoutMs: 30_000, message: 'both groups tracked and draining', retryErrors: true },
    );
    expect((await api.delete('/v1/groups/g')).status).toBe(204);
    await waitForEvent(fx.redis(), fx.prefix, 'orders', ['RESHARD_GROUP_ABANDONED']);
    const again = new TestMember(fx.member(), 'g', 'g-2', ['orders']);
    await again.join();
    const events = await waitForEvent(fx.redis(), fx.prefix, 'orders', ['RESHARD_GROUP_TRACKED']);
    expect(events.find((e) => e.type === 'RESHARD_GROUP_TRACKED')?.data).toEqual({
      stream: 'orders',
      group: 'g',
      shards: [0],
      recreated: true,
    });
    const s = (await routingOf(api, 'orders')).resharding;
    expect(s?.abandonedGroups).toEqual([]);
    expect(s?.drain.find((d) => d.shard === 0)?.removed).toBe(false);
    expect(await fx.redis().xlen(shard0())).toBe(1);
  });
});
