import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { KeySpace, routingFunctionFor } from '@redis-stream-coordinator/nestjs/protocol';
import type { StreamRecord } from '../../../apps/coordinator/src/core/streams/stream-record.js';
import { ShardDataPlane } from '../../../apps/coordinator/src/store/shard-data-plane.js';
import { StreamRegistry } from '../../../apps/coordinator/src/store/stream-registry.js';
import { useRedisPrefix } from '../../support/redis.js';
import { pause, waitFor } from '../../support/wait.js';
import { fill, grant, seqOf, testShard, useReaders } from './data-plane-fixtures.js';

/** `XINFO GROUPS` of a shard as `name → last-delivered-id`. */
async function groupsOf(redis: Redis, key: string): Promise<Map<string, string>> {
  const reply = (await redis.xinfo('GROUPS', key)) as unknown[][];
  const groups = new Map<string, string>();
  for (const row of reply) {
    const fields = new Map<string, unknown>();
    for (let i = 0; i + 1 < row.length; i += 2) fields.set(String(row[i]), row[i + 1]);
    groups.set(String(fields.get('name')), String(fields.get('last-delivered-id')));
  }
  return groups;
}

// Issue 17 part 4 item 2: `startFrom` decides where a NEW consumer group starts on a shard.
describe('ShardReader: startFrom (where a new consumer group starts)', () => {
  const { prefix, redis } = useRedisPrefix('start-from');
  const newReader = useReaders();

  const run = async (
    shardId: number,
    group: string,
    startFrom: 'earliest' | 'latest' | undefined,
    stream = 'orders',
  ): Promise<{ seen: number[] }> => {
    const shard = testShard(prefix, stream, shardId);
    const seen: number[] = [];
    await grant(redis(), shard, group, 'm1');
    const reader = newReader({
      shard,
      group,
      memberId: 'm1',
      ...(startFrom ? { startFrom } : {}),
      handle: async (m) => {
        seen.push(seqOf(m.payload));
      },
    });
    reader.start();
    await waitFor(async () => (await groupsOf(redis(), shard.key)).has(group), {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: `the consumer group ${group} to be created`,
    });
    return { seen };
  };

  it('earliest (the default) handles what the shard held before the group existed', async () => {
    const shard = testShard(prefix, 'orders', 0);
    await fill(redis(), shard.key, 3);
    const { seen } = await run(0, 'early', undefined);
    await waitFor(() => seen.length === 3, { timeoutMs: 10_000, intervalMs: 10, message: '3' });
    expect(seen).toEqual([0, 1, 2]);
  });

  it('latest skips what the shard held before the group existed, handles what comes after', async () => {
    const shard = testShard(prefix, 'orders', 1);
    await fill(redis(), shard.key, 3);
    const { seen } = await run(1, 'late', 'latest');
    await fill(redis(), shard.key, 2, 3);
    await waitFor(() => seen.length === 2, { timeoutMs: 10_000, intervalMs: 10, message: '2' });
    await pause(300); // a bounded look past the point: nothing older arrives
    expect(seen).toEqual([3, 4]);
  });

  it('latest on an existing consumer group resumes where the group stopped', async () => {
    const shard = testShard(prefix, 'orders', 2);
    await fill(redis(), shard.key, 3);
    // the group exists already (created by an earlier member at the start), nothing delivered
    await redis().xgroup('CREATE', shard.key, 'kept', '0', 'MKSTREAM');
    const { seen } = await run(2, 'kept', 'latest');
    await waitFor(() => seen.length === 3, { timeoutMs: 10_000, intervalMs: 10, message: '3' });
    expect(seen).toEqual([0, 1, 2]);
  });

  it('latest on a shard a reshard created starts at its first entry (moved messages are not new)', async () => {
    const shard = testShard(prefix, 'orders', 3);
    await redis().hset(shard.meta, 'state', 'open', 'origin', 'reshard');
    await fill(redis(), shard.key, 3);
    const { seen } = await run(3, 'child', 'latest');
    await waitFor(() => seen.length === 3, { timeoutMs: 10_000, intervalMs: 10, message: '3' });
    expect(seen).toEqual([0, 1, 2]);
  });

  it('latest on a shard restored after Redis lost its data starts at its first entry', async () => {
    // The coordinator restores the stream (docs/protocol.md §13.6); producers write to it before
    // the 'latest' member's first acquire: those entries are not skipped.
    const lost: StreamRecord = {
      stream: 'restored',
      version: 4,
      routingEpoch: 1,
      nextShardId: 1,
      shards: [{ id: 0, state: 'active', parents: [], createdAt: 1 }],
      routing: routingFunctionFor([0]),
      resharding: null,
      createdAt: 1,
    };
    await new StreamRegistry(redis(), new KeySpace(prefix)).restore(lost, Date.now());
    const shard = testShard(prefix, 'restored', 0);
    expect(await redis().hget(shard.meta, 'origin')).toBe('restored');
    await fill(redis(), shard.key, 3);
    const { seen } = await run(0, 'after-loss', 'latest', 'restored');
    await waitFor(() => seen.length === 3, { timeoutMs: 10_000, intervalMs: 10, message: '3' });
    expect(seen).toEqual([0, 1, 2]);
  });

  it('latest on a shard of a completed reshard starts at its next entry (the marker is gone)', async () => {
    const data = new ShardDataPlane(redis(), new KeySpace(prefix));
    const shard = testShard(prefix, 'resharded', 5);
    expect(await data.open('resharded', [5])).toEqual([]);
    expect(await redis().hget(shard.meta, 'origin')).toBe('reshard');
    await data.clearOrigin('resharded', [5]);
    await data.clearOrigin('resharded', [5]); // idempotent (a replica repeating the step)
    expect(await redis().hgetall(shard.meta)).toEqual({ state: 'open', opener: 'reshard' });
    await fill(redis(), shard.key, 3);
    const { seen } = await run(5, 'after-reshard', 'latest', 'resharded');
    await fill(redis(), shard.key, 2, 3);
    await waitFor(() => seen.length === 2, { timeoutMs: 10_000, intervalMs: 10, message: '2' });
    await pause(300); // a bounded look past the point: nothing older arrives
    expect(seen).toEqual([3, 4]);
  });

  it("clearing the reshard marker leaves a restored shard's marker", async () => {
    const data = new ShardDataPlane(redis(), new KeySpace(prefix));
    const shard = testShard(prefix, 'kept', 0);
    await redis().hset(shard.meta, 'state', 'open', 'origin', 'restored');
    await data.clearOrigin('kept', [0]);
    expect(await redis().hget(shard.meta, 'origin')).toBe('restored');
  });
});
