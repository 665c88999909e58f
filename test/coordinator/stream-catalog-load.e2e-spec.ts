import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { createTestRedis, useRedisPrefix } from '../support/redis.js';

/**
 * A Redis client that, while armed, lets the first command through and runs `between` before it
 * sends the next one: a write of another replica landing between two commands of one load (a
 * fault point, on a real Redis). `settle()` disarms it, running `between` if no second command
 * came (the write then lands after the load).
 */
function interleaving(redis: Redis): {
  client: Redis;
  arm(between: () => Promise<void>): void;
  settle(): Promise<void>;
  commands: string[];
} {
  let pending: (() => Promise<void>) | null = null;
  const commands: string[] = [];
  const client = new Proxy(redis, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      const call = (args: unknown[]): unknown =>
        (value as (...a: unknown[]) => unknown).apply(target, args);
      return (...args: unknown[]): unknown => {
        if (!pending) return call(args);
        commands.push(property);
        if (commands.length === 1) return call(args);
        const between = pending;
        pending = null;
        return between().then(() => call(args));
      };
    },
  });
  return {
    client,
    arm: (between) => {
      commands.length = 0;
      pending = between;
    },
    settle: async () => {
      const between = pending;
      pending = null;
      await between?.();
    },
    commands,
  };
}

/**
 * The stream catalog is read in one atomic step: a catalog write racing a replica's load can
 * leave that replica's cache older than Redis, never marked newer than what it holds.
 */
describe('stream catalog load', () => {
  const redis = useRedisPrefix('catalog-load');
  let raw: Redis;
  let other: Redis;

  beforeAll(() => {
    raw = createTestRedis();
    other = createTestRedis();
  });
  afterAll(async () => {
    await raw?.quit();
    await other?.quit();
  });

  it('a write landing during a load never leaves the cache marked newer than its content', async () => {
    const keys = new KeySpace(redis.prefix);
    const hooked = interleaving(raw);
    const replicaA = new StreamRegistry(hooked.client, keys);
    const replicaB = new StreamRegistry(other, keys);
    await replicaB.create('orders', 2, Date.now());
    await replicaA.refresh();
    expect(replicaA.get('orders')).toBeDefined();
    const before = replicaA.version;

    // B creates another stream right after A sent the first command of its next load.
    hooked.arm(async () => {
      await replicaB.create('payments', 4, Date.now());
    });
    await replicaA.refresh();
    await hooked.settle();
    expect(hooked.commands.length).toBeGreaterThan(0);
    const stored = Number(await redis.redis().get(keys.catalogVersionKey()));
    expect(stored).toBeGreaterThan(before);

    // Either A read before the write (old content, old version) or after it (both new).
    if (replicaA.get('payments') === undefined) expect(replicaA.version).toBeLessThan(stored);
    else expect(replicaA.version).toBe(stored);
    // and a replica that is behind catches up when asked for the stored version
    await replicaA.ensureAtLeast(stored);
    expect(replicaA.get('payments')?.shards.length).toBe(4);
    expect(replicaA.version).toBe(stored);
  });
});
