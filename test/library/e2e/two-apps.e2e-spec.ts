import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { type MemberApp, startMemberApp } from './member-app.js';
import { waitFor } from '../../support/wait.js';

const SHARDS = 4;

// Suite 5: several apps with the module in one process share no state: two members of one
// group (different member ids) and one of another group all join and handle on their own;
// closing one leaves the others working.
describe('e2e: apps in one process', () => {
  const redis = useRedisPrefix('e2e-two-apps');
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

  const describeGroup = async (group: string): Promise<DescribedGroup | null> => {
    const res = await api.get<DescribedGroup>(`/v1/groups/${group}`);
    return res.status === 200 ? res.body : null;
  };
  const shardsOf = (group: DescribedGroup | null, member: string): number[] =>
    group?.members.find((m) => m.memberId === member)?.assignment.flatMap((a) => a.shards) ?? [];

  it('members of one group and of another work independently; closing one affects no other', async () => {
    const common = {
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      handle: async () => undefined,
    };
    const a = await startMemberApp({ ...common, group: 'shared', memberId: 'app-a' });
    const b = await startMemberApp({ ...common, group: 'shared', memberId: 'app-b' });
    const c = await startMemberApp({ ...common, group: 'other', memberId: 'app-c' });
    apps.push(a, b, c);

    await waitFor(
      async () => {
        const shared = await describeGroup('shared');
        const other = await describeGroup('other');
        return (
          shared?.state === 'STABLE' &&
          shardsOf(shared, 'app-a').length === 2 &&
          shardsOf(shared, 'app-b').length === 2 &&
          other?.state === 'STABLE' &&
          shardsOf(other, 'app-c').length === SHARDS
        );
      },
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message:
          'app-a and app-b to share the 4 shards of group "shared" and app-c to own all of group "other"',
      },
    );
    await waitFor(
      () =>
        a.runtime.status().held.length === 2 &&
        b.runtime.status().held.length === 2 &&
        c.runtime.status().held.length === SHARDS,
      { timeoutMs: 10_000, intervalMs: 20, message: 'the readers to start' },
    );

    // one producer publishes; both groups consume every message
    const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);
    for (const key of keys) await a.producer.publish('orders', key, { seq: 0 });
    await waitFor(() => a.handled.length + b.handled.length === 40 && c.handled.length === 40, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'both groups to handle the 40 messages',
    });
    expect(a.handled.length).toBeGreaterThan(0);
    expect(b.handled.length).toBeGreaterThan(0);
    expect(new Set([...a.handled, ...b.handled].map((h) => `${h.shard}/${h.id}`)).size).toBe(40);
    expect(new Set(a.handled.map((h) => h.shard)).size).toBeLessThanOrEqual(2);
    expect(a.handled.every((h) => h.memberId === 'app-a')).toBe(true);
    expect(b.handled.every((h) => h.memberId === 'app-b')).toBe(true);
    expect(c.handled.every((h) => h.memberId === 'app-c')).toBe(true);
    const cEpoch = c.runtime.status().memberEpoch;

    // closing app-a: its shards move to app-b at once; app-b and app-c keep working
    const closedAt = Date.now();
    await a.app.close();
    expect(a.runtime.status().phase).toBe('stopped');
    await waitFor(async () => shardsOf(await describeGroup('shared'), 'app-b').length === SHARDS, {
      timeoutMs: 2500,
      intervalMs: 20,
      message: 'app-b to own every shard',
    });
    process.stdout.write(
      `two apps: app-a's shards moved to app-b ${Date.now() - closedAt} ms after close() began\n`,
    );
    await waitFor(() => b.runtime.status().held.length === SHARDS, {
      timeoutMs: 5000,
      intervalMs: 20,
      message: 'app-b to read every shard',
    });
    const before = { b: b.handled.length, c: c.handled.length };
    for (const key of keys) await b.producer.publish('orders', key, { seq: 1 });
    await waitFor(() => b.handled.length === before.b + 40 && c.handled.length === before.c + 40, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'app-b and app-c to handle 40 more',
    });
    expect(b.runtime.status().phase).toBe('active');
    expect(c.runtime.status()).toMatchObject({ phase: 'active', memberEpoch: cEpoch });
    expect((await describeGroup('other'))?.members.map((m) => m.memberId)).toEqual(['app-c']);
    for (const app of [a, b, c]) expect(app.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
