import { fenceToken, ownerField, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix, uniquePrefix, createTestRedis } from '../support/redis.js';
import { startRestartableRedis, type RestartableRedis } from '../support/restartable-redis.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { type ObservedMember, startObservedMember, view } from './support/observed-member.js';
import { pollUntil } from '../support/wait.js';

const COORDINATOR_ENV = {
  STREAMS: 'orders:2',
  HEARTBEAT_INTERVAL_MS: '300',
  SESSION_TIMEOUT_MS: '10000',
};

/** All four member checks, and Redis, as one object. */
async function checks(
  m: ObservedMember,
): Promise<Record<string, { status: string; reason?: string }>> {
  const out: Record<string, { status: string; reason?: string }> = {};
  for (const name of ['coordinator', 'fencing', 'assignment', 'readers'] as const) {
    out[name] = view(m.health[name](name), name) as { status: string; reason?: string };
  }
  out.redis = view(await m.health.redis('redis'), 'redis') as { status: string; reason?: string };
  return out;
}

async function allUp(m: ObservedMember, timeoutMs = 20_000): Promise<void> {
  await pollUntil(
    () => checks(m),
    (last) =>
      Object.values(last).every((c) => c.status === 'up') && m.runtime.status().held.length > 0,
    { timeoutMs, message: 'member checks all up' },
  );
}

describe('member health (StreamCoordinatorHealthIndicator) turns down for each cause', () => {
  const redis = useRedisPrefix('member-health');
  let coordinator: CoordinatorProcess;
  let proxy: TcpProxy;
  let member: ObservedMember | undefined;
  let n = 0;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({ prefix: redis.prefix, env: COORDINATOR_ENV });
    proxy = await startTcpProxy(
      Number(new URL(redisUrl()).port || 6379),
      new URL(redisUrl()).hostname,
    );
  });
  afterEach(async () => {
    proxy.resume();
    await member?.close();
    member = undefined;
  });
  afterAll(async () => {
    await coordinator?.stop();
    await proxy?.close();
  });

  /** A member of a fresh group, talking to Redis through the proxy. */
  async function start(
    extra: Partial<Parameters<typeof startObservedMember>[0]> = {},
  ): Promise<ObservedMember> {
    n++;
    member = await startObservedMember({
      coordinatorUrl: coordinator.url,
      redis: proxy.url,
      group: `g-health-${n}`,
      memberId: `m-${n}`,
      ...extra,
    });
    await allUp(member);
    return member;
  }

  it('is up on every check once joined and reading', async () => {
    const m = await start();
    const all = await m.health.isHealthy('stream-coordinator');
    expect(view(all, 'stream-coordinator').status).toBe('up');
    const c = view(m.health.coordinator('coordinator'), 'coordinator');
    expect(c).toMatchObject({ status: 'up', memberId: 'm-1' });
    expect(c.memberEpoch).toBeGreaterThan(0);
    expect(view(m.health.readers('readers'), 'readers')).toEqual({ status: 'up', alive: 2 });
  });

  it('readers: a blocking read that never comes back is down (not just a failed PING)', async () => {
    const m = await start();
    const paused = Date.now();
    proxy.pause();
    // The blocked XREAD (BLOCK 500 ms) gets no answer: once its watchdog gives up on it the
    // readers check is down, while heartbeats (HTTP to the coordinator) still succeed.
    const readers = await pollUntil(
      () => view(m.health.readers('readers'), 'readers'),
      (v) => v.status === 'down',
      { timeoutMs: 20_000, intervalMs: 25, message: 'readers down' },
    );
    expect(readers.reason).toMatch(/^orders\/[01]: Redis calls failing for \d+ ms \(\d+×\): /);
    expect(Date.now() - paused).toBeLessThan(15_000);
    expect(view(m.health.coordinator('coordinator'), 'coordinator').status).toBe('up');
    expect(view(await m.health.redis('redis'), 'redis')).toMatchObject({ status: 'down' });
    const combined = view(await m.health.isHealthy('member'), 'member');
    expect(combined.status).toBe('down');
    expect(combined.reason).toMatch(/^readers: orders\/[01]: Redis calls failing/);

    proxy.resume();
    await pollUntil(
      () => view(m.health.readers('readers'), 'readers'),
      (v) => v.status === 'up',
      { timeoutMs: 30_000, intervalMs: 100, message: 'readers up again' },
    );
  });

  it('fencing: a shard whose data-plane fence names another member is down', async () => {
    const m = await start();
    const group = m.runtime.status().group;
    const keys = m.runtime.status().held.map((s) => s.key);
    // Another owner, at a decision order no coordinator write can overrule.
    for (const key of keys) {
      await redis
        .redis()
        .hset(
          shardMetaKey(key),
          ownerField(group),
          fenceToken(999_999_999, 'intruder'),
          `fence-order:${group}`,
          '99999999999999:999999999',
        );
    }
    for (let i = 0; i < 4; i++) await m.producer.publish('orders', `k${i}`, { seq: i });
    const fencing = await pollUntil(
      () => view(m.health.fencing('fencing'), 'fencing'),
      (v) => v.status === 'down',
      { timeoutMs: 15_000, intervalMs: 25, message: 'fencing down' },
    );
    expect(fencing.reason).toMatch(
      /^(shard orders\/[01] lost to the data-plane fence \d+ ms ago \(the fence names 999999999:intruder\)|shard orders\/[01] has waited over)/,
    );
  });

  it('fencing: removed by the admin route (UNKNOWN_MEMBER_ID), the member drops everything and is down while it rejoins', async () => {
    const m = await start();
    const group = m.runtime.status().group;
    const admin = new CoordinatorApi(coordinator.url, TEST_TOKENS.admin);
    expect(
      (await admin.delete(`/v1/groups/${group}/members/${m.runtime.status().memberId ?? ''}`))
        .status,
    ).toBe(204);
    // The removal releases its fences at once (its readers see the loss first), and its next
    // heartbeat is refused with UNKNOWN_MEMBER_ID.
    const first = await pollUntil(
      () => view(m.health.fencing('fencing'), 'fencing'),
      (v) => v.status === 'down',
      { timeoutMs: 10_000, intervalMs: 10, message: 'fencing down' },
    );
    expect(first.reason).toMatch(
      /^(fenced by the coordinator \(UNKNOWN_MEMBER_ID\)|shard orders\/[01] lost to the data-plane fence \d+ ms ago \(the fence names nobody\))/,
    );
    const fencing = await pollUntil(
      () => view(m.health.fencing('fencing'), 'fencing'),
      (v) => v.status === 'down' && (v.reason ?? '').startsWith('fenced by the coordinator'),
      { timeoutMs: 10_000, intervalMs: 10, message: 'fencing down, fenced by the coordinator' },
    );
    expect(fencing.reason).toMatch(/^fenced by the coordinator \(UNKNOWN_MEMBER_ID\) \d+ ms ago/);
    // It rejoined: the coordinator answers again (the fencing check clears after its hold time).
    await pollUntil(
      () => view(m.health.coordinator('coordinator'), 'coordinator'),
      (v) => v.status === 'up',
      { timeoutMs: 10_000, intervalMs: 25, message: 'coordinator up' },
    );
    await pollUntil(
      () => view(m.health.fencing('fencing'), 'fencing'),
      (v) => v.status === 'up',
      { timeoutMs: 15_000, intervalMs: 100, message: 'fencing up after the hold' },
    );
  });

  it('coordinator: down when the coordinator does not answer, with the heartbeat failure as reason', async () => {
    const m = await start();
    coordinator.signal('SIGSTOP');
    try {
      const c = await pollUntil(
        () => view(m.health.coordinator('coordinator'), 'coordinator'),
        (v) => v.status === 'down',
        { timeoutMs: 15_000, intervalMs: 25, message: 'coordinator down' },
      );
      expect(c.reason).toMatch(/^(no heartbeat answered for \d+ ms|the last heartbeat failed: )/);
    } finally {
      coordinator.signal('SIGCONT');
    }
    await pollUntil(
      () => view(m.health.coordinator('coordinator'), 'coordinator'),
      (v) => v.status === 'up',
      { timeoutMs: 20_000, intervalMs: 25, message: 'coordinator up' },
    );
  });

  it("assignment: degraded while a revoked shard's handler still runs, down past the grace period", async () => {
    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const m = await start({ handle: () => gate, health: { convergenceGraceMs: 1500 } });
    const group = m.runtime.status().group;
    // A message whose handler hangs, then a second member: one shard must be revoked from m
    // but cannot be released while its handler runs.
    for (let i = 0; i < 8; i++) await m.producer.publish('orders', `slow${i}`, { seq: i });
    const other = await startObservedMember({
      coordinatorUrl: coordinator.url,
      redis: proxy.url,
      group,
      memberId: `other-${n}`,
    });
    try {
      const degraded = await pollUntil(
        () => view(m.health.assignment('assignment'), 'assignment'),
        (v) => v.status !== 'up',
        { timeoutMs: 15_000, intervalMs: 25, message: 'assignment degraded' },
      );
      expect(['degraded', 'down']).toContain(degraded.status);
      const down = await pollUntil(
        () => view(m.health.assignment('assignment'), 'assignment'),
        (v) => v.status === 'down',
        { timeoutMs: 15_000, intervalMs: 25, message: 'assignment down' },
      );
      expect(down.reason).toMatch(
        /^not converged for \d+ ms \(grace 1500 ms\): revoked orders\/[01] still settling/,
      );
    } finally {
      release?.();
      await other.close();
    }
  });
});

describe('member health when Redis itself is stopped', () => {
  let server: RestartableRedis;
  let coordinator: CoordinatorProcess;
  let member: ObservedMember | undefined;

  beforeAll(async () => {
    server = await startRestartableRedis();
    coordinator = await CoordinatorProcess.start({
      prefix: uniquePrefix('member-redis'),
      redisUrl: server.url,
      env: COORDINATOR_ENV,
    });
  });
  afterAll(async () => {
    await member?.close();
    await coordinator?.stop();
    await server?.dispose();
  });

  it('redis, readers and coordinator turn down; all come back up with Redis', async () => {
    member = await startObservedMember({
      coordinatorUrl: coordinator.url,
      redis: server.url,
      group: 'g-redis',
      memberId: 'm-redis',
    });
    const m = member;
    await allUp(m);
    await server.stop();
    const r = await pollUntil(
      async () => view(await m.health.redis('redis'), 'redis'),
      (v) => v.status === 'down',
      { timeoutMs: 10_000, intervalMs: 25, message: 'redis down' },
    );
    expect(r.reason).toMatch(/^Redis unreachable: /);
    await pollUntil(
      () => view(m.health.readers('readers'), 'readers'),
      (v) => v.status === 'down',
      { timeoutMs: 15_000, intervalMs: 25, message: 'readers down' },
    );
    // The coordinator cannot serve without Redis (503): the member's heartbeats fail.
    await pollUntil(
      () => view(m.health.coordinator('coordinator'), 'coordinator'),
      (v) => v.status === 'down',
      { timeoutMs: 15_000, intervalMs: 25, message: 'coordinator down' },
    );
    await server.restart();
    await allUp(m, 40_000);
    const probe = createTestRedis({ url: server.url });
    try {
      expect(await probe.ping()).toBe('PONG');
    } finally {
      probe.disconnect();
    }
  });
});
