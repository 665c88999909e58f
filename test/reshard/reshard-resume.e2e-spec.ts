import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReshardDriver } from '../../apps/coordinator/src/streams/reshard-driver.js';
import { CoordinatorReshardGroups } from '../../apps/coordinator/src/streams/reshard-groups.js';
import { ShardDataPlane } from '../../apps/coordinator/src/store/shard-data-plane.js';
import type { StreamRecord } from '../../apps/coordinator/src/core/streams/stream-record.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from '../coordinator/support/in-process-coordinator.js';
import { useRedisPrefix } from '../support/redis.js';
import { ConsumingMember } from './support/consuming-member.js';

/**
 * A coordinator killed at any point of a reshard resumes it: for every I/O call the driver makes
 * in a clean run, a run where the "process" dies right after that call (the call took effect,
 * nothing after it did), then a fresh driver on fresh objects (as a restarted coordinator) takes
 * over. Each run must complete, with every entry of the old shards consumed before they were
 * deleted and the tracked group's log holding every step. Runs in-process (real Redis) so the
 * crash can be placed at every single step.
 */

class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
}

interface Budget {
  calls: number;
  crashAt: number;
  crashed: boolean;
}

/** Counts async calls on `target`; the `crashAt`-th takes effect, then it and every later call throw. */
function crashing<T extends object>(target: T, budget: Budget): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value: unknown = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (budget.crashed) throw new SimulatedCrash('process is dead');
        const out: unknown = (value as (...a: unknown[]) => unknown).apply(obj, args);
        if (!(out instanceof Promise)) return out;
        return out.then((result: unknown) => {
          budget.calls++;
          if (budget.calls === budget.crashAt) {
            budget.crashed = true;
            throw new SimulatedCrash(`crash after call ${budget.calls}`);
          }
          return result;
        });
      };
    },
  });
}

/** A driver on objects of its own (registry, group coordinator), as one coordinator process. */
function driverOn(c: InProcessCoordinator, budget?: Budget, pollMs = 20): ReshardDriver {
  const wrap = <T extends object>(o: T): T => (budget ? crashing(o, budget) : o);
  return new ReshardDriver(
    wrap(c.registry),
    wrap(new ShardDataPlane(c.redis, c.keys)),
    wrap(new CoordinatorReshardGroups(c.coordinator, c.store)),
    { now: () => Date.now() },
    { pollMs, idleNoticeMs: 600_000, maxShards: 64 },
    { log: () => undefined, warn: () => undefined },
  );
}

describe('reshard resumes after a coordinator crash at any step', () => {
  const redis = useRedisPrefix('reshard-resume');
  let c: InProcessCoordinator;
  beforeAll(async () => {
    c = await startInProcessCoordinator({ prefix: redis.prefix });
  });
  afterAll(async () => {
    await c.close();
  });

  /** One run on stream `name`: 2 → 3 shards, 20 entries per old shard, crash after call `crashAt` (0: none). */
  async function run(
    name: string,
    crashAt: number,
  ): Promise<{ calls: number; record: StreamRecord }> {
    await c.registry.create(name, 2, Date.now());
    const group = `g-${name}`;
    const member = new ConsumingMember(c, group, name);
    await member.cycle();
    for (const id of [0, 1]) {
      for (let i = 0; i < 20; i++) {
        await c.redis.xadd(c.keys.shardKey(name, id), '*', 'key', `k${i}`, 'payload', '{}');
      }
    }
    const budget: Budget = { calls: 0, crashAt, crashed: false };
    const first = driverOn(c, budget);
    const drive = async (driver: ReshardDriver, alive: () => boolean): Promise<void> => {
      for (let i = 0; i < 200 && alive(); i++) {
        try {
          if (i === 0) await driver.request(name, { shards: 3, mode: 'strict' });
          else await driver.advance(name);
        } catch (error) {
          if (!(error instanceof SimulatedCrash)) throw error;
        }
        await c.registry.refresh();
        if (c.registry.get(name)?.resharding === null) return;
        await member.cycle();
      }
    };
    await drive(first, () => !budget.crashed);
    if (budget.crashed) {
      // The "restarted" coordinator: fresh objects on the same Redis.
      const fresh = await startInProcessCoordinator({ prefix: redis.prefix });
      try {
        const second = driverOn(fresh);
        await fresh.registry.refresh();
        // Died before the request was persisted: the client got no 202 and asks again.
        if (
          fresh.registry.get(name)?.resharding === null &&
          fresh.registry.get(name)?.nextShardId === 2
        ) {
          await second.request(name, { shards: 3, mode: 'strict' });
        }
        for (let i = 0; i < 200; i++) {
          await second.advance(name);
          await c.registry.refresh();
          if (c.registry.get(name)?.resharding === null) break;
          await member.cycle();
        }
      } finally {
        await fresh.close();
      }
    }
    await c.registry.refresh();
    const record = c.registry.get(name) as StreamRecord;
    expect(
      record.resharding,
      `${name}: still ${JSON.stringify(record.resharding?.state)}`,
    ).toBeNull();
    expect(record.shards.map((s) => s.id)).toEqual([2, 3, 4]);
    for (const id of [2, 3, 4]) {
      // They no longer force a new consumer group to 0 (docs/protocol.md §12.3).
      const meta = `${c.keys.shardKey(name, id)}:meta`;
      expect(await c.redis.hget(meta, 'origin'), `${name}: shard ${id} origin`).toBeNull();
    }
    expect(member.consumed, `${name}: consumed`).toBe(40);
    for (const id of [0, 1]) {
      const key = c.keys.shardKey(name, id);
      expect(await c.redis.exists(key, `${key}:meta`)).toBe(0);
    }
    const events = await c.store.events(group, undefined, 1000);
    const steps = new Set(events.filter((e) => e.type.startsWith('RESHARD_')).map((e) => e.type));
    expect([...steps].sort()).toEqual(
      [
        'RESHARD_COMPLETED',
        'RESHARD_REQUESTED',
        'RESHARD_SHARDS_CLOSED',
        'RESHARD_SHARD_DRAINED',
        'RESHARD_SHARD_RELEASED',
        'RESHARD_SHARD_REMOVED',
        'RESHARD_STARTED',
      ].sort(),
    );
    return { calls: budget.calls, record };
  }

  it('completes after a crash right after each of the driver calls of a clean run', async () => {
    const clean = await run('clean', 0);
    expect(clean.calls).toBeGreaterThan(10);
    for (let at = 1; at <= clean.calls; at++) await run(`crash${at}`, at);
  });

  it('two replicas driving the same reshard at once: it completes, each step logged once per group', async () => {
    const name = 'replicas';
    await c.registry.create(name, 3, Date.now());
    const group = `g-${name}`;
    const member = new ConsumingMember(c, group, name);
    await member.cycle();
    for (const id of [0, 1, 2]) {
      for (let i = 0; i < 10; i++)
        await c.redis.xadd(c.keys.shardKey(name, id), '*', 'key', `k${i}`, 'payload', '{}');
    }
    const other = await startInProcessCoordinator({ prefix: redis.prefix });
    try {
      // pollMs only sets how long a replica leaves another's fresh steps to it (3 × pollMs).
      const a = driverOn(c, undefined, 250);
      const b = driverOn(other, undefined, 250);
      await a.request(name, { shards: 2, mode: 'strict' });
      for (let i = 0; i < 300; i++) {
        // Each replica's poll round starts from a fresh catalog (as pub/sub and the poll loop do).
        await Promise.all([c.registry.refresh(), other.registry.refresh()]);
        await Promise.all([a.advance(name), b.advance(name)]);
        await member.cycle();
        await c.registry.refresh();
        if (c.registry.get(name)?.resharding === null) break;
        await new Promise((r) => setTimeout(r, 10));
      }
    } finally {
      await other.close();
    }
    expect(c.registry.get(name)?.resharding).toBeNull();
    expect(member.consumed).toBe(30);
    const steps = (await c.store.events(group, undefined, 1000))
      .filter((e) => e.type.startsWith('RESHARD_'))
      .map((e) => e.data.step as number);
    expect(steps.length).toBeGreaterThan(8);
    expect(new Set(steps).size, `duplicates in ${steps.join(',')}`).toBe(steps.length);
  });
});
