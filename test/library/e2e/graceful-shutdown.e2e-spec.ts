import type {
  DescribedGroup,
  GroupEventEntry,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { fetchGroupEvents } from '../../support/invariants/index.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { type MemberApp, startMemberApp } from './member-app.js';
import { waitFor } from '../../support/wait.js';

/** A promise and its resolve function. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}

// Suite 6: app.close() stops reading, waits for the in-flight handler (bounded by
// shutdownTimeoutMs), lets its ack land, sends the leave heartbeat (the member is gone from
// describe at once), and only then closes its Redis connections — with nothing logged after.
describe('e2e: graceful shutdown order', () => {
  const redis = useRedisPrefix('e2e-shutdown');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  let proxy: TcpProxy;
  let routing: StreamRouting;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:1', HEARTBEAT_INTERVAL_MS: '500', SESSION_TIMEOUT_MS: '3000' },
    });
    api = new CoordinatorApi(coordinator.url);
    routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    // the app reaches Redis through a proxy, so its own connections can be counted
    proxy = await TcpProxy.start(
      Number(new URL(redisUrl()).port || 6379),
      new URL(redisUrl()).hostname,
    );
  });
  afterAll(async () => {
    await proxy?.close();
    await coordinator?.stop();
  });

  const members = async (group: string): Promise<string[]> => {
    const res = await api.get<DescribedGroup>(`/v1/groups/${group}`);
    return res.status === 200 ? res.body.members.map((m) => m.memberId) : [];
  };
  const pending = async (group: string): Promise<number> =>
    Number(
      ((await redis.redis().xpending(routing.shards[0]?.key as string, group)) as unknown[])[0],
    );
  const pendingIds = async (group: string): Promise<string[]> =>
    (
      (await redis
        .redis()
        .xpending(routing.shards[0]?.key as string, group, '-', '+', 100)) as Array<[string]>
    ).map(([id]) => id);
  const started = async (app: MemberApp, group: string, member: string): Promise<void> => {
    await waitFor(
      async () => (await members(group)).includes(member) && app.runtime.status().held.length === 1,
      { timeoutMs: 15_000, intervalMs: 20, message: `${member} to own the shard` },
    );
  };

  it('drains the in-flight handler, acks, leaves, then closes Redis; nothing logged after', async () => {
    const release = gate();
    const entered = gate();
    let handlerEndedAt = 0;
    const app = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: proxy.url,
      group: 'drain',
      memberId: 'drainer',
      module: { shutdownTimeoutMs: 10_000 },
      handle: async () => {
        entered.open();
        await release.promise;
        handlerEndedAt = Date.now();
      },
    });
    await started(app, 'drain', 'drainer');
    expect(proxy.connections).toBeGreaterThan(0);
    await app.producer.publish('orders', 'k', { seq: 0 });
    await entered.promise;
    expect(await pending('drain')).toBe(1);

    const closeAt = Date.now();
    let closedAt = 0;
    let openAtClose = -1;
    const closing = app.app.close().then(() => {
      closedAt = Date.now();
      openAtClose = proxy.connections;
    });
    // while the handler runs: still a member, close() waits, connections open
    await new Promise((r) => setTimeout(r, 600));
    expect(closedAt).toBe(0);
    expect(await members('drain')).toEqual(['drainer']);
    expect(proxy.connections).toBeGreaterThan(0);
    expect(app.runtime.status().phase).toBe('leaving');

    // watch the connections go while the rest of the shutdown runs
    let connectionsGoneAt = 0;
    const watching = waitFor(() => proxy.connections === 0, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the app to close its Redis connections',
    }).then(() => {
      connectionsGoneAt = Date.now();
    });
    release.open();
    await closing;
    await watching;
    const logCountAtClose = app.logs.length;

    // the member was gone from describe as soon as close() resolved; the ack landed
    expect(await members('drain')).toEqual([]);
    expect(await pending('drain')).toBe(0);
    expect(app.handled).toHaveLength(1);
    const events: GroupEventEntry[] = await fetchGroupEvents(
      coordinator.url,
      TEST_TOKENS.admin,
      'drain',
    );
    const left = events.find((e) => e.type === 'MEMBER_LEFT' && e.data.memberId === 'drainer');
    expect(left, 'a leave heartbeat').toBeDefined();
    const leftAt = Date.parse((left as GroupEventEntry).at);
    process.stdout.write(
      `shutdown: handler ended +${handlerEndedAt - closeAt} ms, left +${leftAt - closeAt} ms, connections closed +${connectionsGoneAt - closeAt} ms, close() resolved +${closedAt - closeAt} ms (${openAtClose} proxied connections still open then)\n`,
    );
    // order: handler settled → (ack, which the fence only accepts before the leave) → leave → connections closed
    expect(leftAt).toBeGreaterThanOrEqual(handlerEndedAt - 2);
    expect(connectionsGoneAt).toBeGreaterThanOrEqual(leftAt - 2);
    // (QUIT answered: the sockets finish closing right after)
    expect(connectionsGoneAt).toBeLessThanOrEqual(closedAt + 250);
    expect(app.runtime.status().phase).toBe('stopped');

    // nothing logged at error or warning level during the shutdown, and nothing at all after it
    await new Promise((r) => setTimeout(r, 500));
    expect(app.logs.slice(logCountAtClose)).toEqual([]);
    expect(
      app.logs.filter((l) => l.at >= closeAt && (l.level === 'error' || l.level === 'warn')),
    ).toEqual([]);
  });

  it('bounds the drain by shutdownTimeoutMs: leaves anyway, the unfinished entry stays pending', async () => {
    const release = gate();
    const entered = gate();
    let inFlight = '';
    const app = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: proxy.url,
      group: 'stuck',
      memberId: 'stuck-member',
      module: { shutdownTimeoutMs: 400 },
      handle: async (message) => {
        inFlight = message.id;
        entered.open();
        await release.promise;
      },
    });
    try {
      await started(app, 'stuck', 'stuck-member');
      await app.producer.publish('orders', 'k', { seq: 0 });
      await entered.promise;
      const closeAt = Date.now();
      await app.app.close();
      const took = Date.now() - closeAt;
      process.stdout.write(
        `shutdown with a stuck handler: close() took ${took} ms (shutdownTimeoutMs 400)\n`,
      );
      expect(took).toBeGreaterThanOrEqual(380);
      expect(took).toBeLessThan(3000);
      expect(await members('stuck')).toEqual([]);
      expect(
        app.logs.some((l) => l.level === 'warn' && /still running after 400 ms/.test(l.message)),
      ).toBe(true);
      // the handler never finished: its entry waits in the pending list for the next owner
      // (a new group starts at the beginning of the stream, so it may have read more)
      expect(await pendingIds('stuck')).toContain(inFlight);
      await waitFor(() => proxy.connections === 0, {
        timeoutMs: 5000,
        intervalMs: 20,
        message: 'the connections to close',
      });
    } finally {
      release.open();
    }
    // the late completion cannot ack (connections closed, shard released): still pending
    await new Promise((r) => setTimeout(r, 300));
    expect(await pendingIds('stuck')).toContain(inFlight);
    expect(app.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
