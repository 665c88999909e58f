import { setTimeout as delay } from 'node:timers/promises';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { type AppHandled, type MemberApp, startMemberApp } from './member-app.js';

const SHARDS = 2;

/** One handler call as the test saw it (failures included). */
interface Call {
  readonly member: string;
  readonly shard: number;
  readonly key: string;
  readonly seq: number;
  readonly delivery: number;
  readonly t0: number;
  t1: number;
  ok: boolean;
}

/** Most calls of one shard in flight at once. */
function peakConcurrency(calls: readonly Call[]): number {
  const edges = calls.flatMap((c) => [
    { t: c.t0, d: 1 },
    { t: c.t1, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let peak = 0;
  for (const e of edges) {
    now += e.d;
    peak = Math.max(peak, now);
  }
  return peak;
}

/** Per key: successful handlings in seq order, each starting after the previous one ended. */
function perKeyProblems(handled: readonly AppHandled[]): string[] {
  const byKey = new Map<string, AppHandled[]>();
  for (const h of handled) byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
  const problems: string[] = [];
  for (const [key, list] of byKey) {
    const byStart = [...list].sort((a, b) => a.t0 - b.t0);
    for (let i = 1; i < byStart.length; i++) {
      const prev = byStart[i - 1] as AppHandled;
      const h = byStart[i] as AppHandled;
      if (h.seq < prev.seq) problems.push(`${key}#${h.seq} handled after #${prev.seq}`);
      if (h.t0 < prev.t1) problems.push(`${key}#${h.seq} started before #${prev.seq} ended`);
    }
  }
  return problems;
}

// ordering: 'key' with real Nest apps and a real coordinator and Redis: a shard's keys are
// handled concurrently, each key in entry order; a retried key holds back only itself; a revoked
// shard's in-flight handlers all settle (and are acked) before the next owner starts on it.
describe('e2e: ordering key (in-shard parallelism by key)', () => {
  const redis = useRedisPrefix('e2e-key-order');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  const apps: MemberApp[] = [];

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: `orders:${SHARDS}`,
        HEARTBEAT_INTERVAL_MS: '500',
        SESSION_TIMEOUT_MS: '3000',
      },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    for (const a of apps) await a.app.close().catch(() => undefined);
    await coordinator?.stop();
  });

  const shardsOf = async (group: string, member: string): Promise<number[]> => {
    const res = await api.get<DescribedGroup>(`/v1/groups/${group}`);
    if (res.status !== 200 || res.body.state !== 'STABLE') return [];
    return (
      res.body.members
        .find((m) => m.memberId === member)
        ?.assignment.flatMap((a) => a.shards)
        .sort() ?? []
    );
  };

  /** Starts an app of `group` whose handler sees only keys starting with `prefix`. */
  const start = async (
    group: string,
    memberId: string,
    prefix: string,
    calls: Call[],
    work: (key: string, delivery: number) => Promise<void>,
    handlerDefaults: Record<string, unknown> = {},
  ): Promise<MemberApp> => {
    const app = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group,
      memberId,
      module: { handlerDefaults: { ordering: 'key', maxConcurrency: 8, ...handlerDefaults } },
      handle: async (message) => {
        if (!message.key.startsWith(prefix)) return;
        const call: Call = {
          member: memberId,
          shard: message.shard,
          key: message.key,
          seq: message.payload.seq,
          delivery: message.deliveryCount,
          t0: performance.timeOrigin + performance.now(),
          t1: 0,
          ok: false,
        };
        calls.push(call);
        try {
          await work(message.key, message.deliveryCount);
          call.ok = true;
        } finally {
          call.t1 = performance.timeOrigin + performance.now();
        }
      },
    });
    apps.push(app);
    return app;
  };

  const publish = async (app: MemberApp, keys: readonly string[], perKey: number) => {
    const messages = [];
    for (let seq = 0; seq < perKey; seq++)
      for (const key of keys) messages.push({ key, payload: { seq } });
    await app.producer.publishBatch('orders', messages);
    return messages.length;
  };

  it('keeps per-key order while different keys of a shard overlap', async () => {
    const calls: Call[] = [];
    const app = await start('key-order', 'ko-a', 'ko-', calls, () => delay(20));
    await waitFor(async () => (await shardsOf('key-order', 'ko-a')).length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'ko-a to own both shards',
    });
    const keys = Array.from({ length: 12 }, (_, i) => `ko-${i}`);
    const total = await publish(app, keys, 10);
    const began = performance.timeOrigin + performance.now();
    await waitFor(() => app.handled.filter((h) => h.key.startsWith('ko-')).length >= total, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: `ko-a to handle the ${total} messages`,
    });
    const handled = app.handled.filter((h) => h.key.startsWith('ko-'));
    expect(new Set(handled.map((h) => `${h.shard}/${h.id}`)).size).toBe(total);
    expect(perKeyProblems(handled)).toEqual([]);
    // overlap, per shard: most calls at once, and busy time over wall time
    for (let shard = 0; shard < SHARDS; shard++) {
      const mine = calls.filter((c) => c.shard === shard);
      if (mine.length === 0) continue;
      const peak = peakConcurrency(mine);
      const busy = mine.reduce((sum, c) => sum + (c.t1 - c.t0), 0);
      const span = Math.max(...mine.map((c) => c.t1)) - Math.min(...mine.map((c) => c.t0));
      const keysOnShard = new Set(mine.map((c) => c.key)).size;
      process.stdout.write(
        `ordering key: shard ${shard}: ${mine.length} calls over ${keysOnShard} keys, peak ${peak} at once (maxConcurrency 8), busy ${Math.round(busy)} ms in ${Math.round(span)} ms wall (overlap ×${(busy / span).toFixed(1)})\n`,
      );
      if (keysOnShard >= 2) {
        expect(peak).toBeGreaterThan(1);
        expect(busy / span).toBeGreaterThan(1.5);
      }
      expect(peak).toBeLessThanOrEqual(Math.min(8, keysOnShard));
    }
    process.stdout.write(
      `ordering key: ${total} messages in ${Math.round(performance.timeOrigin + performance.now() - began)} ms (20 ms each; one at a time per shard would take ≥ ${(total * 20) / SHARDS} ms)\n`,
    );
    expect(app.logs.filter((l) => l.level === 'error')).toEqual([]);
    // entries still in flight at the next read are not taken for orphans (no reclaim loop)
    expect(app.logs.filter((l) => l.message.includes('not seen'))).toEqual([]);
  });

  it('a retried key holds back only itself', async () => {
    const calls: Call[] = [];
    const app = await start(
      'key-retry',
      'kr-a',
      'kr-',
      calls,
      async (key, delivery) => {
        if (key === 'kr-poison' && delivery < 3) {
          await delay(300);
          throw new Error(`kr-poison fails delivery ${delivery}`);
        }
        await delay(10);
      },
      { retry: { initialDelayMs: 50, maxDelayMs: 50, multiplier: 1 }, maxDeliveries: 5 },
    );
    await waitFor(async () => (await shardsOf('key-retry', 'kr-a')).length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'kr-a to own both shards',
    });
    const keys = Array.from({ length: 16 }, (_, i) => `kr-${i}`);
    const total = await publish(app, ['kr-poison', ...keys], 5);
    await waitFor(() => app.handled.filter((h) => h.key.startsWith('kr-')).length >= total, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: `kr-a to handle the ${total} messages`,
    });
    const handled = app.handled.filter((h) => h.key.startsWith('kr-'));
    expect(perKeyProblems(handled)).toEqual([]);
    const poison = handled.filter((h) => h.key === 'kr-poison').sort((a, b) => a.t0 - b.t0);
    expect(poison.map((h) => h.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(poison[0]?.deliveryCount).toBe(3);
    const firstSuccess = poison[0] as AppHandled;
    // the other keys of the poison's shard were all done while kr-poison#0 was being retried
    const sameShard = handled.filter(
      (h) => h.key !== 'kr-poison' && h.shard === firstSuccess.shard,
    );
    const others = new Set(sameShard.map((h) => h.key));
    expect(others.size).toBeGreaterThan(0);
    const otherDone = sameShard.map((h) => h.t1);
    expect(otherDone).toHaveLength(others.size * 5);
    expect(Math.max(...otherDone)).toBeLessThan(firstSuccess.t0);
    const failures = calls.filter((c) => c.key === 'kr-poison' && !c.ok);
    // every kr-poison message fails its first two deliveries, one after another
    expect(failures).toHaveLength(10);
    for (const h of poison) expect(h.deliveryCount).toBe(3);
    process.stdout.write(
      `ordering key: ${otherDone.length} messages of ${others.size} other keys on the poison's shard done ${Math.round(firstSuccess.t0 - Math.max(...otherDone))} ms before kr-poison#0 succeeded on its 3rd delivery\n`,
    );
  });

  it('a revoke drains every in-flight handler (acked) before the next owner starts', async () => {
    const calls: Call[] = [];
    let inFlight = 0;
    const slow = async (): Promise<void> => {
      inFlight++;
      try {
        await delay(400);
      } finally {
        inFlight--;
      }
    };
    const a = await start('key-revoke', 'kv-a', 'kv-', calls, slow);
    await waitFor(async () => (await shardsOf('key-revoke', 'kv-a')).length === SHARDS, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'kv-a to own both shards',
    });
    const keys = Array.from({ length: 16 }, (_, i) => `kv-${i}`);
    const total = await publish(a, keys, 3);
    await waitFor(() => inFlight >= 8, {
      timeoutMs: 10_000,
      intervalMs: 5,
      message: 'kv-a to have 8 handlers in flight',
    });
    const b = await start('key-revoke', 'kv-b', 'kv-', calls, slow);
    await waitFor(async () => (await shardsOf('key-revoke', 'kv-b')).length === 1, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'kv-b to be given one shard',
    });
    const [moved] = await shardsOf('key-revoke', 'kv-b');
    const all = (): AppHandled[] =>
      [...a.handled, ...b.handled].filter((h) => h.key.startsWith('kv-'));
    await waitFor(() => new Set(all().map((h) => `${h.shard}/${h.id}`)).size >= total, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: `the ${total} messages to be handled`,
    });
    const onMoved = calls.filter((c) => c.shard === moved);
    const lastOfA = Math.max(...onMoved.filter((c) => c.member === 'kv-a').map((c) => c.t1));
    const firstOfB = Math.min(...onMoved.filter((c) => c.member === 'kv-b').map((c) => c.t0));
    expect(onMoved.some((c) => c.member === 'kv-a')).toBe(true);
    expect(onMoved.some((c) => c.member === 'kv-b')).toBe(true);
    expect(firstOfB).toBeGreaterThanOrEqual(lastOfA);
    // drained handlers were acked before the release: the next owner handles none of them again
    expect(all()).toHaveLength(total);
    expect(perKeyProblems(all())).toEqual([]);
    process.stdout.write(
      `ordering key: shard ${moved} moved to kv-b ${Math.round(firstOfB - lastOfA)} ms after kv-a's last in-flight handler ended (${onMoved.filter((c) => c.member === 'kv-a').length} calls by kv-a, ${onMoved.filter((c) => c.member === 'kv-b').length} by kv-b)\n`,
    );
  });
});
