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
 * A Redis client that, while holding, runs each command at once on the real Redis but keeps the
 * first one's reply from its caller until `release()`: a load that read Redis before a write
 * but finishes after it. `resolved(n)` waits until `n` commands sent while holding have replied.
 */
function delayedReply(redis: Redis): {
  client: Redis;
  hold(): void;
  release(): void;
  resolved(n: number): Promise<void>;
} {
  let gate: { promise: Promise<void>; open: () => void } | null = null;
  let sent = 0;
  let replied = 0;
  const waiters: Array<{ n: number; done: () => void }> = [];
  const client = new Proxy(redis, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || typeof property !== 'string') return value;
      return (...args: unknown[]): unknown => {
        const result = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (!gate || !(result instanceof Promise)) return result;
        const held = sent++ === 0 ? gate.promise : Promise.resolve();
        return result.then(async (reply: unknown) => {
          replied++;
          for (const w of waiters.filter((x) => replied >= x.n)) w.done();
          await held;
          return reply;
        });
      };
    },
  });
  return {
    client,
    hold: () => {
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gate = { promise, open };
      sent = 0;
      replied = 0;
    },
    release: () => {
      gate?.open();
      gate = null;
    },
    resolved: (n) =>
      replied >= n ? Promise.resolve() : new Promise((done) => waiters.push({ n, done })),
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

  it('a refresh called after another replica wrote reflects that write, even with a load in flight', async () => {
    const keys = new KeySpace(redis.prefix);
    const delayed = delayedReply(raw);
    const replicaA = new StreamRegistry(delayed.client, keys);
    const replicaB = new StreamRegistry(other, keys);
    await replicaB.create('refunds', 2, Date.now());
    await replicaA.refresh();

    // A's load reads Redis now, its reply is held; B writes; A is then asked to refresh.
    delayed.hold();
    const inFlight = replicaA.refresh();
    await delayed.resolved(1);
    await replicaB.create('invoices', 4, Date.now());
    const afterWrite = replicaA.refresh();
    delayed.release();
    await Promise.all([inFlight, afterWrite]);
    expect(replicaA.get('invoices')?.shards.length).toBe(4);
  });

  it("a write's own result is in the cache when write() returns, even with a load in flight", async () => {
    const keys = new KeySpace(redis.prefix);
    const delayed = delayedReply(raw);
    const replica = new StreamRegistry(delayed.client, keys);
    await replica.create('shipments', 2, Date.now());
    const record = replica.get('shipments');
    if (!record) throw new Error('shipments was not created');

    delayed.hold();
    const inFlight = replica.refresh();
    await delayed.resolved(1);
    const written = replica.write(
      { ...record, version: record.version + 1, routingEpoch: record.routingEpoch + 1 },
      record.version,
      [],
    );
    // The write's script has replied, and write() has gone on to refresh the cache.
    await delayed.resolved(2);
    await new Promise((resolve) => setImmediate(resolve));
    delayed.release();
    expect(await written).toBe(true);
    await inFlight;
    expect(replica.get('shipments')?.routingEpoch).toBe(record.routingEpoch + 1);
  });
});
