import { RoutingTable } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReshardDriver } from '../../apps/coordinator/src/streams/reshard-driver.js';
import { CoordinatorReshardGroups } from '../../apps/coordinator/src/streams/reshard-groups.js';
import { ShardDataPlane } from '../../apps/coordinator/src/store/shard-data-plane.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from '../coordinator/support/in-process-coordinator.js';
import { useRedisPrefix } from '../support/redis.js';
import { ConsumingMember } from './support/consuming-member.js';
import { streamEvents } from './support/reshard-cluster.js';

/**
 * A group whose first member joins while a reshard is `preparing` — after the driver discovered
 * the groups, before the new layout is published — reads the old shards (they are still the
 * layout) without being tracked. The driver is held at its `afterDiscover` fault point while the
 * member joins and reads part of its backlog; released, it publishes a layout that does not track
 * the group. Its old shards must still not be deleted before it drained them: the drain step
 * reads the old shards' consumer groups and tracks the group (in strict order) from then on.
 */
describe('reshard: a group whose first member joins during preparing', () => {
  const redis = useRedisPrefix('reshard-late-group');
  let c: InProcessCoordinator;
  beforeAll(async () => {
    c = await startInProcessCoordinator({ prefix: redis.prefix });
  });
  afterAll(async () => {
    await c.close();
  });

  it('is tracked before its old shards are deleted; it gets every message, each key in order', async () => {
    const stream = 'late';
    await c.registry.create(stream, 2, Date.now());
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    const seq = new Map<string, number>();
    const write = async (routing: RoutingTable, key: string): Promise<void> => {
      const n = (seq.get(key) ?? 0) + 1;
      seq.set(key, n);
      await c.redis.xadd(
        c.keys.shardKey(stream, routing.shardFor(key)),
        '*',
        'key',
        key,
        'payload',
        String(n),
      );
    };
    const before = new RoutingTable(c.registry.get(stream)?.routing ?? ({} as never));
    for (let round = 0; round < 5; round++) for (const k of keys) await write(before, k);

    let discovered!: () => void;
    const atFaultPoint = new Promise<void>((resolve) => (discovered = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let held = false;
    const driver = new ReshardDriver(
      c.registry,
      new ShardDataPlane(c.redis, c.keys),
      new CoordinatorReshardGroups(c.coordinator, c.store),
      { now: () => Date.now() },
      {
        pollMs: 20,
        idleNoticeMs: 600_000,
        maxShards: 64,
        hooks: {
          afterDiscover: async (_stream, groups) => {
            if (held) return;
            held = true;
            expect(groups).toEqual([]);
            discovered();
            await released;
          },
        },
      },
      { log: () => undefined, warn: () => undefined },
    );
    const requested = driver.request(stream, { shards: 3, mode: 'strict' });
    await atFaultPoint;

    // The group's first member joins now: the old shards are still the layout, so it gets them,
    // creates its consumer groups on them and reads part of its backlog.
    const member = new ConsumingMember(c, 'joined-late', stream, 7);
    await member.beat();
    expect(member.shards()).toEqual([0, 1]);
    for (const id of member.shards()) await member.consume(id);
    expect(member.consumed).toBe(14);

    release();
    await requested;
    await c.registry.refresh();
    const published = c.registry.get(stream);
    const started = (await streamEvents(c.redis, redis.prefix, stream)).find(
      (e) => e.type === 'RESHARD_STARTED',
    );
    // Published without it (it was not there when the groups were discovered)...
    expect(started?.data.groups).toEqual([]);
    // ...and tracked before anything it reads was deleted.
    expect(published?.resharding?.groups).toEqual(['joined-late']);
    const after = new RoutingTable(published?.routing ?? ({} as never));
    for (let round = 0; round < 3; round++) for (const k of keys) await write(after, k);

    for (let i = 0; i < 400; i++) {
      await driver.advance(stream);
      await c.registry.refresh();
      if (c.registry.get(stream)?.resharding === null) break;
      await member.cycle();
    }
    const record = c.registry.get(stream);
    expect(record?.resharding ?? null).toBeNull();
    expect(record?.shards.map((s) => s.id)).toEqual([2, 3, 4]);
    // Whatever the new shards still hold for it is read now.
    for (let i = 0; i < 20; i++) await member.cycle();

    const sent = [...seq.values()].reduce((a, b) => a + b, 0);
    expect(member.consumed).toBe(sent);
    const lastSeen = new Map<string, number>();
    const outOfOrder: string[] = [];
    for (const e of member.entries) {
      const n = Number(e.payload);
      if (n !== (lastSeen.get(e.key) ?? 0) + 1)
        outOfOrder.push(`${e.key}#${n} after #${lastSeen.get(e.key) ?? 0}`);
      lastSeen.set(e.key, n);
    }
    expect(outOfOrder).toEqual([]);
    const tracked = (await streamEvents(c.redis, redis.prefix, stream)).filter(
      (e) => e.type === 'RESHARD_GROUP_TRACKED',
    );
    expect(tracked.map((e) => e.data.group)).toEqual(['joined-late']);
    for (const id of [0, 1]) {
      const key = c.keys.shardKey(stream, id);
      expect(await c.redis.exists(key, `${key}:meta`)).toBe(0);
    }
  });
});
