import type { ProtocolErrorBody, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { snapshotKeys } from '../coordinator/support/coordinator-fixture.js';
import { TestMember } from '../coordinator/support/test-member.js';
import {
  groupEvents,
  reshard,
  routingOf,
  streamEvents,
  useReshardCoordinator,
  waitReshardDone,
} from './support/reshard-cluster.js';
import { waitForNoProblems } from '../support/wait.js';

const ids = (r: StreamRouting): number[] => r.shards.map((s) => s.id);
const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

describe('POST /v1/streams/{stream}/reshard', () => {
  const fx = useReshardCoordinator('reshard-route', {
    STREAMS: 'a:8,b:12,c:1,d:16,e:4,f:4,g:4,h:4',
    MAX_SHARDS: '64',
  });
  const shardKey = (stream: string, id: number): string => `${fx.prefix}:{${stream}:${id}}`;

  /** Puts an undelivered entry into old shards and a consumer group for `group` on them, so they are not drained. */
  async function backlog(stream: string, group: string, shards: readonly number[]): Promise<void> {
    for (const id of shards) {
      await fx.redis().xadd(shardKey(stream, id), '*', 'key', 'k', 'payload', '{}');
      await fx.redis().xgroup('CREATE', shardKey(stream, id), group, '0');
    }
  }

  for (const [stream, from, to] of [
    ['a', 8, 12],
    ['b', 12, 5],
    ['c', 1, 16],
    ['d', 16, 1],
  ] as const) {
    it(`${stream}: ${from} → ${to} with no consumer: fresh ids, new routing, old keys deleted, DLQ kept`, async () => {
      const api = fx.admin();
      const redis = fx.redis();
      await redis.xadd(shardKey(stream, 0), '*', 'key', 'k', 'payload', '{}');
      await redis.xadd(`${fx.prefix}:{${stream}}:dlq`, '*', 'marker', '1');
      const accepted = await reshard(api, stream, to);
      expect(accepted.routingEpoch).toBe(2);
      expect(ids(accepted)).toEqual(range(from, to));
      expect(accepted.routing.ranges.map((x) => x.shard)).toEqual(range(from, to));
      const done = await waitReshardDone(api, stream, 30_000);
      expect(ids(done)).toEqual(range(from, to));
      for (let id = 0; id < from; id++)
        expect(await redis.exists(shardKey(stream, id), `${shardKey(stream, id)}:meta`)).toBe(0);
      for (const id of range(from, to)) {
        expect(await redis.hget(`${shardKey(stream, id)}:meta`, 'state')).toBe('open');
        // The `origin=reshard` marker (a `startFrom: 'latest'` reader starts such a shard at 0) is
        // cleared once the reshard completed: a group created later gets its own startFrom
        // (docs/protocol.md §12.3).
        expect(await redis.hget(`${shardKey(stream, id)}:meta`, 'origin')).toBeNull();
      }
      expect(await redis.xlen(`${fx.prefix}:{${stream}}:dlq`)).toBe(1);
      // PUT is idempotent for the new count, refuses the old one.
      expect((await api.put(`/v1/streams/${stream}`, { shards: to })).status).toBe(200);
      expect(
        (await api.put<ProtocolErrorBody>(`/v1/streams/${stream}`, { shards: from })).body.error
          .code,
      ).toBe('STREAM_EXISTS');
      const types = (await streamEvents(redis, fx.prefix, stream)).map((e) => e.type);
      expect(types).toEqual([
        'STREAM_CREATED',
        'RESHARD_REQUESTED',
        'RESHARD_STARTED',
        'RESHARD_SHARDS_CLOSED',
        ...Array.from({ length: from }, () => 'RESHARD_SHARD_REMOVED'),
        'RESHARD_COMPLETED',
      ]);
    });
  }

  it('a second reshard: ids continue after the highest id the stream ever had', async () => {
    const api = fx.admin();
    await waitReshardDone(api, 'c', 30_000);
    await reshard(api, 'c', 3);
    expect(ids(await waitReshardDone(api, 'c', 30_000))).toEqual([17, 18, 19]);
  });

  it('the same count is a no-op: 200 with the unchanged routing', async () => {
    const api = fx.admin();
    const before = await routingOf(api, 'h');
    const res = await api.post<StreamRouting>('/v1/streams/h/reshard', { shards: 4 });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(before);
  });

  for (const [name, body, mention] of [
    ['negative', { shards: -1 }, 'shards'],
    ['non-integer', { shards: 2.5 }, 'shards'],
    ['a string', { shards: '4' }, 'shards'],
    ['missing', {}, 'shards'],
    ['unknown field', { shards: 4, force: true }, 'force'],
    ['null mode', { shards: 4, mode: null }, 'mode'],
  ] as const) {
    it(`400 for ${name} and nothing changes`, async () => {
      const before = await snapshotKeys(fx.redis(), fx.prefix);
      const res = await fx.admin().post<ProtocolErrorBody>('/v1/streams/h/reshard', body);
      expect([res.status, res.body.error.code]).toEqual([400, 'INVALID_REQUEST']);
      expect(res.body.error.message).toContain(mention);
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
    });
  }

  it('404 STREAM_NOT_FOUND for an unknown stream', async () => {
    const res = await fx.admin().post<ProtocolErrorBody>('/v1/streams/nope/reshard', { shards: 2 });
    expect([res.status, res.body.error.code]).toEqual([404, 'STREAM_NOT_FOUND']);
  });

  it('an EMPTY group with undrained old shards holds the change (409 for another one) until it is deleted', async () => {
    const api = fx.admin();
    const member = new TestMember(fx.member(), 'paused', 'p1', ['e']);
    await member.join();
    await fx.member().post('/v1/groups/paused/leave', { memberId: 'p1' });
    await backlog('e', 'paused', [0]);
    const accepted = await reshard(api, 'e', 6);
    expect(accepted.resharding).toMatchObject({
      mode: 'strict',
      keyOrder: 'kept',
      groups: ['paused'],
      fromShards: [0, 1, 2, 3],
      toShards: range(4, 6),
    });
    // Shards 1-3 had nothing for it: drained and removed; shard 0 waits.
    await waitForNoProblems(
      async () => {
        const s = (await routingOf(api, 'e')).resharding;
        return s?.drain
          .filter((d) => !d.removed)
          .map((d) => d.shard)
          .join() === '0'
          ? []
          : [JSON.stringify(s)];
      },
      { timeoutMs: 30_000, message: 'only shard 0 left to drain', retryErrors: true },
    );
    const status = (await routingOf(api, 'e')).resharding;
    expect(status?.state).toBe('draining');
    expect(status?.drain[0]).toMatchObject({
      shard: 0,
      key: shardKey('e', 0),
      closed: true,
      pendingGroups: ['paused'],
      removed: false,
    });
    expect(status?.abandonedGroups).toEqual([]);

    const before = await routingOf(api, 'e');
    const again = await api.post<ProtocolErrorBody>('/v1/streams/e/reshard', { shards: 2 });
    expect([again.status, again.body.error.code]).toEqual([409, 'RESHARD_IN_PROGRESS']);
    expect(again.body.error.message).toContain('already being resharded');
    const after = await routingOf(api, 'e');
    expect(after.resharding?.state).toBe(before.resharding?.state);
    expect(ids(after)).toEqual(ids(before));
    // PUT is idempotent for the count producers write to now.
    expect((await api.put('/v1/streams/e', { shards: 6 })).status).toBe(200);
    // Writes to the closed shard are refused.
    expect(await fx.redis().hget(`${shardKey('e', 0)}:meta`, 'state')).toBe('closed');

    expect((await api.delete('/v1/groups/paused')).status).toBe(204);
    await waitReshardDone(api, 'e', 30_000);
    const abandoned = (await streamEvents(fx.redis(), fx.prefix, 'e')).filter(
      (e) => e.type === 'RESHARD_GROUP_ABANDONED',
    );
    expect(abandoned.map((e) => [e.data.group, e.data.reason])).toEqual([['paused', 'deleted']]);
    expect(await fx.redis().exists(shardKey('e', 0))).toBe(0);
  });

  it('strict: a member is given only old shards until they drain; its epoch bump says "reshard"', async () => {
    const api = fx.admin();
    const m = new TestMember(fx.member(), 'live', 'l1', ['f']);
    await m.join();
    await backlog('f', 'live', [0, 1, 2, 3]);
    await reshard(api, 'f', 2);
    await m.beat();
    await m.beat();
    expect(m.shards('f')).toEqual([0, 1, 2, 3]);
    const events = await groupEvents(api, 'live');
    expect(events.some((e) => e.type === 'RESHARD_STARTED')).toBe(true);
    // Drain shards 0 and 1 (parents of new shard 4): it becomes the member's once both are released.
    for (const id of [0, 1]) {
      const [[, entries]] = (await fx
        .redis()
        .xreadgroup('GROUP', 'live', 'l1', 'STREAMS', shardKey('f', id), '>')) as [
        [string, Array<[string, string[]]>],
      ];
      await fx.redis().xack(shardKey('f', id), 'live', ...entries.map(([entryId]) => entryId));
    }
    await waitForNoProblems(
      async () => {
        await m.beat();
        return m.shards('f').join() === '2,3,4' ? [] : [`holds ${m.shards('f').join()}`];
      },
      {
        timeoutMs: 30_000,
        message: 'shard 4 assigned once its parents drained',
        retryErrors: true,
      },
    );
    const reasons = (await groupEvents(api, 'live'))
      .filter((e) => e.type === 'TARGET_ASSIGNMENT_CHANGED')
      .map((e) => e.data.reason);
    expect(reasons.at(-1)).toBe('reshard');
    expect(
      (await groupEvents(api, 'live')).some(
        (e) => e.type === 'RESHARD_SHARD_DRAINED' && e.data.shard === 0,
      ),
    ).toBe(true);
  });

  it('relaxed: new shards are given at once, and the status says key order is not guaranteed', async () => {
    const api = fx.admin();
    const m = new TestMember(fx.member(), 'eager', 'e1', ['g']);
    await m.join();
    await backlog('g', 'eager', [0, 1, 2, 3]);
    const accepted = await reshard(api, 'g', 2, 'relaxed');
    expect(accepted.resharding).toMatchObject({ mode: 'relaxed', keyOrder: 'not-guaranteed' });
    // Given on the next heartbeats without waiting for the old shards to drain; the replica may
    // answer one heartbeat before its catalog cache has the new layout (it follows the catalog's
    // change notification), so beat until it does, bounded.
    await waitForNoProblems(
      async () => {
        await m.beat();
        return m.shards('g').join() === '0,1,2,3,4,5' ? [] : [`holds ${m.shards('g').join()}`];
      },
      { timeoutMs: 10_000, message: 'the new shards given before the old ones drained' },
    );
    expect(m.shards('g')).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
