import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/redis-processes.js';
import { connectRedis } from '../../support/redis-client.js';
import { uniquePrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { type AppHandled, type MemberApp, startMemberApp } from './member-app.js';

const GROUP = 'keyed-restart';
const KEYS = ['k-a', 'k-b'];
const PER_KEY = 6;

/**
 * `ordering: 'key'`: a member gives its shard up (it shuts down) while Redis is down, so the
 * `uncount` script that takes a delivery back from each entry it buffered but never handed is
 * skipped. Redis comes back (same data, AOF) and the next owner claims those entries: their
 * delivery count is one too high (2 where 1 was due), and nothing worse happens — nothing is
 * lost, nothing is dead-lettered, the two members never handle the shard at once, and each key
 * is handled in order.
 */
describe('key ordering: the release uncount skipped while Redis restarts', () => {
  let redis: RestartableRedis | undefined;
  let client: Redis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  const apps: MemberApp[] = [];
  afterAll(async () => {
    for (const a of apps) await a.app.close().catch(() => undefined);
    await coordinator?.stop();
    client?.disconnect();
    await redis?.dispose();
  });

  it('over-counts the buffered entries by one, and nothing worse', async () => {
    redis = await startRestartableRedis();
    const prefix = uniquePrefix('key-uncount');
    client = connectRedis(redis.url, { maxRetriesPerRequest: 2 });
    client.on('error', () => undefined); // refused while Redis is down
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: redis.url,
      env: { STREAMS: 'orders:1', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    const api = new CoordinatorApi(coordinator.url);
    const shardKey = new KeySpace(prefix).shardKey('orders', 0);
    const module = {
      handlerDefaults: {
        ordering: 'key' as const,
        maxConcurrency: 2,
        maxBufferedEntries: 50,
        maxDeliveries: 3,
      },
      shutdownTimeoutMs: 15_000,
    };

    // A: each key's first entry is handed and blocks; the rest wait buffered behind their key
    let unblock: () => void = () => undefined;
    const blocked = new Promise<void>((resolve) => (unblock = resolve));
    let started = 0;
    const a = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redis.url,
      group: GROUP,
      memberId: 'ku-a',
      module,
      handle: async () => {
        started++;
        await blocked;
      },
    });
    apps.push(a);
    await waitFor(() => a.runtime.status().held.length === 1, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'ku-a to read the shard',
    });
    const messages = [];
    for (let seq = 0; seq < PER_KEY; seq++)
      for (const key of KEYS) messages.push({ key, payload: { seq } });
    await a.producer.publishBatch('orders', messages);
    const total = messages.length;
    await waitFor(
      async () =>
        started === KEYS.length &&
        Number(((await client!.xpending(shardKey, GROUP)) as unknown[])[0]) === total,
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'ku-a to run one entry per key and buffer the rest',
      },
    );

    // Redis goes down; A shuts down meanwhile: its handlers finish, but its acks and the
    // uncount of the 10 buffered entries cannot reach Redis
    const t = Date.now();
    await redis.stop();
    const closing = a.app.close();
    unblock();
    await closing;
    // a shutdown with Redis down waits for nothing Redis would have to answer
    const closedAfter = Date.now() - t;
    expect(closedAfter).toBeLessThan(5000);
    expect(a.handled).toHaveLength(KEYS.length);
    await redis.restart();
    expect(Number(((await client.xpending(shardKey, GROUP)) as unknown[])[0])).toBe(total);

    // B takes the shard over once A is gone (its leave never reached the coordinator: expiry)
    const b = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redis.url,
      group: GROUP,
      memberId: 'ku-b',
      module,
      handle: async () => undefined,
    });
    apps.push(b);
    await waitFor(() => b.handled.length >= total, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: () => `ku-b to handle the ${total} entries (${b.handled.length} so far)`,
    });
    await waitFor(
      async () => Number(((await client!.xpending(shardKey, GROUP)) as unknown[])[0]) === 0,
      { timeoutMs: 10_000, intervalMs: 20, message: 'every entry to be acknowledged' },
    );
    const group = (await api.get<DescribedGroup>(`/v1/groups/${GROUP}`)).body;
    expect(group.members.map((m) => m.memberId)).toEqual(['ku-b']);

    // nothing lost, nothing handled twice by B, no dead letter
    const key = (h: AppHandled): string => `${h.key}#${h.seq}`;
    expect(new Set(b.handled.map(key)).size).toBe(total);
    expect(b.handled).toHaveLength(total);
    expect(await client.xlen(new KeySpace(prefix).deadLetterKey('orders'))).toBe(0);
    // one owner at a time: B starts after A's last handler ended
    const lastOfA = Math.max(...a.handled.map((h) => h.t1));
    expect(Math.min(...b.handled.map((h) => h.t0))).toBeGreaterThanOrEqual(lastOfA);
    // per key, in order
    for (const k of KEYS) {
      const seqs = b.handled.filter((h) => h.key === k).map((h) => h.seq);
      expect(seqs).toEqual([...Array(PER_KEY).keys()]);
    }
    // the counts: the two entries A handled (its acks lost) come back as a second delivery, as
    // after any lost ack; the ten it only buffered are one too high (2, where 1 was due)
    const handedByA = new Set(a.handled.map(key));
    const buffered = b.handled.filter((h) => !handedByA.has(key(h)));
    expect(buffered).toHaveLength(total - KEYS.length);
    expect(new Set(buffered.map((h) => h.deliveryCount))).toEqual(new Set([2]));
    expect(new Set(b.handled.map((h) => h.deliveryCount))).toEqual(new Set([2]));
    expect([...a.logs, ...b.logs].filter((l) => l.level === 'error')).toEqual([]);
  }, 90_000);
});
