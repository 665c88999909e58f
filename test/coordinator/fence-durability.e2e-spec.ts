import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { ownerField, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import type { OwnershipChange } from '../../apps/coordinator/src/core/group-transaction.js';
import type { StreamCatalog } from '../../apps/coordinator/src/core/stream-catalog.js';
import { FenceWriter, type FenceStamp } from '../../apps/coordinator/src/store/fence-writer.js';
import { useRedisPrefix } from '../support/redis.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from './support/in-process-coordinator.js';

/** A fence writer that can be made to fail, as if the process died right after the commit. */
class CrashingFenceWriter extends FenceWriter {
  failing = false;

  override apply(
    groupId: string,
    changes: readonly OwnershipChange[],
    stamp: FenceStamp,
    catalog: StreamCatalog,
  ): Promise<void> {
    if (this.failing)
      return Promise.reject(new Error('simulated crash between the commit and the fence writes'));
    return super.apply(groupId, changes, stamp, catalog);
  }
}

/**
 * Data-plane fences stay right through delays and crashes: every write is ordered by the decision
 * it carries (group incarnation, version), and a change's fence writes are stored with the change
 * so whoever loads the group next re-applies them if their writer died first.
 */
describe('fence durability', () => {
  const redis = useRedisPrefix('fences');
  const started: InProcessCoordinator[] = [];
  const start = async (fences?: CrashingFenceWriter): Promise<InProcessCoordinator> => {
    const c = await startInProcessCoordinator({
      prefix: redis.prefix,
      streams: { orders: 4 },
      ...(fences ? { fences: () => fences } : {}),
    });
    started.push(c);
    return c;
  };
  let base: InProcessCoordinator;

  beforeAll(async () => {
    base = await start();
  });
  afterAll(async () => {
    await Promise.all(started.map((c) => c.close()));
  });

  const owner = (group: string, shard: number): Promise<string | null> =>
    redis.redis().hget(shardMetaKey(base.keys.shardKey('orders', shard)), ownerField(group));

  it('never lets a delayed grant or release undo a newer decision, across incarnations too', async () => {
    const fences = new FenceWriter(base.redis);
    const g = 'g-order';
    const grant = (to: string): OwnershipChange[] => [
      { stream: 'orders', shard: 0, from: null, to },
    ];
    const release: OwnershipChange[] = [{ stream: 'orders', shard: 0, from: 'a', to: null }];
    const at = (version: number, incarnation = 100): FenceStamp => ({ incarnation, version });

    await fences.apply(g, grant('a'), at(5), base.registry);
    await fences.ensure(g, 'a', [['orders', 0]], at(8), base.registry);
    expect(await owner(g, 0)).toBe('8:a');
    // A release decided at 6 arrives late: "a" was granted again at 8 and keeps it.
    await fences.apply(g, release, at(6), base.registry);
    expect(await owner(g, 0)).toBe('8:a');
    await fences.apply(g, release, at(9), base.registry);
    expect(await owner(g, 0)).toBeNull();
    // A grant decided at 7 arrives after the release at 9: refused, the shard stays free.
    await fences.apply(g, grant('b'), at(7), base.registry);
    await fences.ensure(g, 'a', [['orders', 0]], at(8), base.registry);
    expect(await owner(g, 0)).toBeNull();
    // The group is deleted and created again: its versions restart, its incarnation is later.
    await fences.apply(g, grant('c'), at(1, 200), base.registry);
    expect(await owner(g, 0)).toBe('1:c');
    await fences.apply(g, grant('a'), at(50, 100), base.registry);
    expect(await owner(g, 0)).toBe('1:c');
  });

  it('re-applies the fence writes of a change whose writer died after the commit', async () => {
    const g = 'g-crash';
    const crashing = new CrashingFenceWriter(base.redis);
    const x = await start(crashing);
    const join = (c: InProcessCoordinator, memberId: string) =>
      c.coordinator.heartbeat(
        g,
        {
          memberId,
          memberEpoch: 0,
          rebalanceTimeoutMs: 10_000,
          subscribedStreams: ['orders'],
          ownedShards: [],
        },
        null,
      );

    // The join commits, then the writer "dies" before any fence is written.
    crashing.failing = true;
    await expect(join(x, 'a')).rejects.toThrow(/simulated crash/);
    expect(await Promise.all([0, 1, 2, 3].map((s) => owner(g, s)))).toEqual([
      null,
      null,
      null,
      null,
    ]);
    // The same replica reloads the group on its next request (its cache was dropped) and repairs.
    crashing.failing = false;
    const loaded = await x.coordinator.read(g);
    expect(loaded.state.members.has('a')).toBe(true);
    expect(
      (await Promise.all([0, 1, 2, 3].map((s) => owner(g, s)))).map((t) => t?.split(':')[1]),
    ).toEqual(['a', 'a', 'a', 'a']);

    // b joins; a is told to revoke two shards and acknowledges, and the writer dies again.
    const b = (await join(x, 'b')) as HeartbeatResponse;
    const told = (await x.coordinator.heartbeat(
      g,
      { memberId: 'a', memberEpoch: 1 },
      null,
    )) as HeartbeatResponse;
    const kept = told.assignment?.shards[0]?.shards ?? [];
    const released = [0, 1, 2, 3].filter((s) => !kept.includes(s));
    expect(released).toHaveLength(2);
    crashing.failing = true;
    await expect(
      x.coordinator.heartbeat(
        g,
        { memberId: 'a', memberEpoch: 1, ownedShards: [{ stream: 'orders', shards: kept }] },
        null,
      ),
    ).rejects.toThrow(/simulated crash/);
    // Committed (a no longer holds them) but the fences still name a: stale until repaired.
    for (const s of released) expect((await owner(g, s))?.endsWith(':a')).toBe(true);

    // A restarted coordinator loads the group and clears them before serving anything.
    const y = await start();
    await y.coordinator.read(g);
    for (const s of released) expect(await owner(g, s)).toBeNull();
    for (const s of kept) expect((await owner(g, s))?.endsWith(':a')).toBe(true);
    const granted = (await y.coordinator.heartbeat(
      g,
      { memberId: 'b', memberEpoch: b.memberEpoch },
      null,
    )) as HeartbeatResponse;
    expect(granted.assignment?.shards[0]?.shards).toEqual(released);
    for (const s of released) expect((await owner(g, s))?.endsWith(':b')).toBe(true);
  });
});
