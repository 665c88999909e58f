import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import {
  gateField,
  ownerField,
  shardGateKey,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { OwnershipChange } from '../../apps/coordinator/src/core/group-transaction.js';
import type { StreamCatalog } from '../../apps/coordinator/src/core/stream-catalog.js';
import type { FenceStamp } from '../../apps/coordinator/src/store/fence-stamp.js';
import { FenceWriter, deleteShardKeys } from '../../apps/coordinator/src/store/fence-writer.js';
import { FenceWriteRefusedError } from '../../apps/coordinator/src/store/fence-write-refused.error.js';
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
    const at = (version: number, incarnation = 100, commitId = `c${version}`): FenceStamp => ({
      incarnation,
      version,
      commitId,
    });
    const refused = (write: Promise<void>) =>
      expect(write).rejects.toBeInstanceOf(FenceWriteRefusedError);

    await fences.apply(g, grant('a'), at(5), base.registry);
    await fences.ensure(g, 'a', [['orders', 0]], at(8), base.registry);
    expect(await owner(g, 0)).toBe('8:a');
    // A release decided at 6 arrives late: "a" was granted again at 8 and keeps it.
    await refused(fences.apply(g, release, at(6), base.registry));
    expect(await owner(g, 0)).toBe('8:a');
    await fences.apply(g, release, at(9), base.registry);
    expect(await owner(g, 0)).toBeNull();
    // A grant decided at 7 arrives after the release at 9: refused, the shard stays free.
    await refused(fences.apply(g, grant('b'), at(7), base.registry));
    await refused(fences.ensure(g, 'a', [['orders', 0]], at(8), base.registry));
    expect(await owner(g, 0)).toBeNull();
    // The group is deleted and created again: its versions restart, its incarnation is later.
    await fences.apply(g, grant('c'), at(1, 200), base.registry);
    expect(await owner(g, 0)).toBe('1:c');
    await refused(fences.apply(g, grant('a'), at(50, 100), base.registry));
    expect(await owner(g, 0)).toBe('1:c');
    // Another commit at the very same version (Redis lost the first one): refused, not re-granted;
    // the commit that decided it may repeat its writes.
    await refused(fences.ensure(g, 'a', [['orders', 0]], at(1, 200, 'lost'), base.registry));
    expect(await owner(g, 0)).toBe('1:c');
    await fences.ensure(g, 'c', [['orders', 0]], at(1, 200), base.registry);
    expect(await owner(g, 0)).toBe('1:c');
    // The order stays readable by a release without commit identities; the commit is beside it.
    const meta = await redis.redis().hgetall(shardMetaKey(base.keys.shardKey('orders', 0)));
    expect(meta[`fence-order:${g}`]).toBe('200:1');
    expect(meta[`fence-commit:${g}`]).toBe('200:1:c1');
  });

  it('read gates follow the token in the same script: only the owner has one, and no late write resurrects an older owner’s gate', async () => {
    const fences = new FenceWriter(base.redis);
    const g = 'g-gates';
    const key = base.keys.shardKey('orders', 1);
    const gate = (member: string): string => shardGateKey(key, g, member);
    const gates = async (): Promise<Record<string, boolean>> => {
      const out: Record<string, boolean> = {};
      for (const m of ['a', 'b', 'c']) {
        const groups = (await redis
          .redis()
          .xinfo('GROUPS', gate(m))
          .catch(() => null)) as unknown[][] | null;
        out[m] = groups !== null && groups.some((flat) => flat[1] === g);
      }
      return out;
    };
    const change = (from: string | null, to: string | null): OwnershipChange[] => [
      { stream: 'orders', shard: 1, from, to },
    ];
    const at = (version: number): FenceStamp => ({
      incarnation: 100,
      version,
      commitId: `c${version}`,
    });
    const refused = (write: Promise<void>) =>
      expect(write).rejects.toBeInstanceOf(FenceWriteRefusedError);

    await fences.apply(g, change(null, 'a'), at(5), base.registry);
    expect(await gates()).toEqual({ a: true, b: false, c: false });
    expect(await redis.redis().hget(shardMetaKey(key), gateField(g))).toBe(gate('a'));
    // The shard moves to b: a's gate goes in the same script.
    await fences.apply(g, change('a', 'b'), at(6), base.registry);
    expect(await owner(g, 1)).toBe('6:b');
    expect(await gates()).toEqual({ a: false, b: true, c: false });
    // A grant to a decided earlier arrives late: refused, a's gate stays gone.
    await refused(fences.apply(g, change(null, 'a'), at(5), base.registry));
    await refused(fences.ensure(g, 'a', [['orders', 1]], at(4), base.registry));
    expect(await gates()).toEqual({ a: false, b: true, c: false });
    // ensure at the current decision re-creates a gate that went missing, and keeps the owner's.
    await redis.redis().del(gate('b'));
    await fences.ensure(g, 'b', [['orders', 1]], at(6), base.registry);
    expect(await gates()).toEqual({ a: false, b: true, c: false });
    // A stale gate the record does not know of (the token still names its member) goes too.
    await redis.redis().hdel(shardMetaKey(key), gateField(g));
    await fences.apply(g, change('b', 'c'), at(7), base.registry);
    expect(await gates()).toEqual({ a: false, b: false, c: true });
    // A late release is refused; a current one deletes token, record and gate.
    await refused(fences.apply(g, change('c', null), at(6), base.registry));
    expect(await gates()).toEqual({ a: false, b: false, c: true });
    await fences.apply(g, change('c', null), at(8), base.registry);
    expect(await owner(g, 1)).toBeNull();
    expect(await redis.redis().hget(shardMetaKey(key), gateField(g))).toBeNull();
    expect(await gates()).toEqual({ a: false, b: false, c: false });
    // …and a grant decided before that release cannot bring any gate back.
    await refused(fences.apply(g, change(null, 'c'), at(7), base.registry));
    expect(await gates()).toEqual({ a: false, b: false, c: false });
    // A recorded gate key outside this shard's gate prefix is never touched.
    const foreign = `${base.keys.shardKey('orders', 2)}:gate:${g}:x`;
    await redis.redis().xgroup('CREATE', foreign, g, '$', 'MKSTREAM');
    await redis.redis().hset(shardMetaKey(key), gateField(g), foreign);
    await fences.apply(g, change(null, 'a'), at(9), base.registry);
    expect(await redis.redis().exists(foreign)).toBe(1);
    expect(await gates()).toEqual({ a: true, b: false, c: false });
  });

  it('deleting a removed shard deletes its stream, meta hash and every gate left on it, nothing else', async () => {
    const fences = new FenceWriter(base.redis);
    const key = base.keys.shardKey('orders', 3);
    const neighbour = base.keys.shardKey('orders', 2);
    const at = (version: number): FenceStamp => ({ incarnation: 100, version, commitId: 'c' });
    await redis.redis().xadd(key, '*', 'key', 'k', 'payload', '{}');
    await fences.ensure('g-del-1', 'a', [['orders', 3]], at(1), base.registry);
    await fences.ensure('g-del-1', 'n', [['orders', 2]], at(1), base.registry);
    await fences.ensure('g-del-2', 'b', [['orders', 3]], at(1), base.registry);
    // a gate only the token knows of (its record lost)
    await redis.redis().hdel(shardMetaKey(key), gateField('g-del-2'));
    const doomed = [
      key,
      shardMetaKey(key),
      shardGateKey(key, 'g-del-1', 'a'),
      shardGateKey(key, 'g-del-2', 'b'),
    ];
    for (const k of doomed) expect(await redis.redis().exists(k)).toBe(1);
    expect(await deleteShardKeys(base.redis, key)).toBe(4);
    for (const k of doomed) expect(await redis.redis().exists(k)).toBe(0);
    expect(await redis.redis().exists(shardGateKey(neighbour, 'g-del-1', 'n'))).toBe(1);
    expect(await deleteShardKeys(base.redis, key)).toBe(0); // idempotent
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

    const pending = () => redis.redis().hget(x.keys.groupMetaKey(g), 'pendingFences');
    // The join commits, then the writer "dies" before any fence is written.
    crashing.failing = true;
    await expect(join(x, 'a')).rejects.toThrow(/simulated crash/);
    expect(await pending()).not.toBeNull();
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
    // Written: the record goes, so later loads do not write the same grants again.
    expect(await pending()).toBeNull();

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
    expect(await pending()).not.toBeNull();
    const y = await start();
    await y.coordinator.read(g);
    expect(await pending()).toBeNull();
    for (const s of released) expect(await owner(g, s)).toBeNull();
    for (const s of kept) expect((await owner(g, s))?.endsWith(':a')).toBe(true);
    const granted = (await y.coordinator.heartbeat(
      g,
      { memberId: 'b', memberEpoch: b.memberEpoch },
      null,
    )) as HeartbeatResponse;
    expect(granted.assignment?.shards[0]?.shards).toEqual(released);
    for (const s of released) expect((await owner(g, s))?.endsWith(':b')).toBe(true);
    // A commit whose fence writes all went through leaves nothing to replay.
    expect(await pending()).toBeNull();
  });
});
