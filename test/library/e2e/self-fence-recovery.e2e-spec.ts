import type { DescribedGroup, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { type MemberApp, startMemberApp } from './member-app.js';
import { waitFor } from '../../support/wait.js';

const SESSION_TIMEOUT_MS = 6000;

// A member cut off from the coordinator (not from Redis) for longer than its self-fencing
// deadline (75% of the session timeout) but shorter than the session timeout: it stops all its
// shards on its own, the coordinator never expires it, and once the coordinator answers again
// it takes its shards back and goes on — entries it had read but not acked included.
describe('e2e: self-fencing and recovery', () => {
  const redis = useRedisPrefix('e2e-self-fence');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  let proxy: TcpProxy;
  let app: MemberApp | undefined;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: 'orders:2',
        HEARTBEAT_INTERVAL_MS: '500',
        SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      },
    });
    api = new CoordinatorApi(coordinator.url);
    proxy = await TcpProxy.start(coordinator.port);
  });
  afterAll(async () => {
    await app?.app.close();
    await proxy?.close();
    await coordinator?.stop();
  });

  it('self-fences while the coordinator is unreachable, then resumes every shard', async () => {
    let slow = false;
    const member = await startMemberApp({
      coordinatorUrl: `http://127.0.0.1:${proxy.port}`,
      redis: redisUrl(),
      group: 'fence',
      memberId: 'cut-off',
      module: { requestTimeoutMs: 1000 },
      handle: async () => {
        if (slow) await new Promise((r) => setTimeout(r, 50));
      },
    });
    app = member;
    const phases: string[] = [];
    const { MemberRuntimeEvents } = await import('@redis-stream-coordinator/nestjs/internal');
    member.app.get(MemberRuntimeEvents).onLifecycle((type) => phases.push(type));
    await waitFor(() => member.runtime.status().held.length === 2, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the member to read both shards',
    });
    const routing = (await api.get<StreamRouting>('/v1/streams/orders')).body;
    const pending = async (): Promise<number> => {
      let n = 0;
      for (const s of routing.shards)
        n += Number(((await redis.redis().xpending(s.key, 'fence')) as unknown[])[0]);
      return n;
    };
    const keys = Array.from({ length: 20 }, (_, i) => `k${i}`);
    for (const key of keys) await member.producer.publish('orders', key, { seq: 0 });
    await waitFor(() => member.handled.length === 20, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the first 20 messages',
    });

    // cut the member off from the coordinator; keep publishing (slowly handled) meanwhile
    slow = true;
    proxy.pause();
    const cutAt = Date.now();
    for (let seq = 1; seq <= 5; seq++)
      for (const key of keys) await member.producer.publish('orders', key, { seq });
    await waitFor(() => member.runtime.status().phase === 'self-fenced', {
      timeoutMs: SESSION_TIMEOUT_MS,
      intervalMs: 20,
      message: 'the member to self-fence',
    });
    const fencedAfter = Date.now() - cutAt;
    await waitFor(() => member.runtime.status().held.length === 0, {
      timeoutMs: 5000,
      intervalMs: 20,
      message: 'every reader to stop',
    });
    const handledWhileFenced = member.handled.length;
    // still a member as far as the coordinator knows (no expiry)
    const described = (await api.get<DescribedGroup>('/v1/groups/fence')).body;
    expect(described.members.map((m) => m.memberId)).toEqual(['cut-off']);
    await new Promise((r) => setTimeout(r, 300));
    expect(member.handled.length).toBe(handledWhileFenced);

    // the coordinator answers again: the member takes both shards back and catches up
    slow = false;
    proxy.resume();
    const resumedAt = Date.now();
    await waitFor(
      () => member.runtime.status().phase === 'active' && member.runtime.status().held.length === 2,
      { timeoutMs: 10_000, intervalMs: 20, message: 'the member to take its shards back' },
    );
    await waitFor(async () => member.handled.length >= 120 && (await pending()) === 0, {
      timeoutMs: 20_000,
      intervalMs: 20,
      message: () =>
        `all 120 messages handled and acked (handled ${member.handled.length}, pending ...)`,
    });
    process.stdout.write(
      `self-fence: fenced ${fencedAfter} ms after the cut (deadline ${SESSION_TIMEOUT_MS * 0.75} ms after the last heartbeat), caught up ${Date.now() - resumedAt} ms after the coordinator came back; lifecycle: ${phases.join(' → ')}\n`,
    );
    expect(fencedAfter).toBeLessThan(SESSION_TIMEOUT_MS * 0.75 + 500);
    const groupAfter = (await api.get<DescribedGroup>('/v1/groups/fence')).body;
    expect(groupAfter.members.map((m) => m.memberId)).toEqual(['cut-off']);
    // every message handled, per key in order of first handling
    for (const key of keys) {
      const firsts: number[] = [];
      for (const h of member.handled)
        if (h.key === key && !firsts.includes(h.seq)) firsts.push(h.seq);
      expect(firsts).toEqual([0, 1, 2, 3, 4, 5]);
    }
  });

  it('ignores a heartbeat answer that arrives after it self-fenced, and takes its shards back', async () => {
    await app?.app.close();
    proxy.latencyMs = 0;
    const member = await startMemberApp({
      coordinatorUrl: `http://127.0.0.1:${proxy.port}`,
      redis: redisUrl(),
      group: 'late-answer',
      memberId: 'late',
      module: { requestTimeoutMs: 8000 },
      handle: async () => undefined,
    });
    app = member;
    await waitFor(() => member.runtime.status().held.length === 2, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the member to read both shards',
    });
    // (a new group reads the stream from its start: the first test's messages come too)
    for (let i = 0; i < 10; i++) await member.producer.publish('orders', `late-${i}`, { seq: 0 });
    const mine = (seq: number): number =>
      member.handled.filter((h) => h.key.startsWith('late-') && h.seq === seq).length;
    await waitFor(() => mine(0) === 10, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the first 10 messages',
    });

    // Every byte to and from the coordinator now takes 2.3 s each way: the heartbeat in flight
    // is answered (successfully: no expiry, the session is 6 s) only after the member
    // self-fenced at 4.5 s. A nudge meanwhile asks for the next heartbeat at once.
    proxy.latencyMs = 2300;
    await waitFor(() => member.runtime.status().phase === 'self-fenced', {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the member to self-fence',
    });
    await redis.redis().publish(`${redis.prefix}:nudge:late-answer`, 'late');
    proxy.latencyMs = 0;

    // the late answer must not undo the self-fence's reset: the member rejoins, owns and reads
    // both shards again, and handles new messages
    await waitFor(
      () => member.runtime.status().phase === 'active' && member.runtime.status().held.length === 2,
      {
        timeoutMs: 10_000,
        intervalMs: 20,
        message: () =>
          `the member to take both shards back (status ${JSON.stringify(member.runtime.status())})`,
      },
    );
    for (let i = 0; i < 10; i++) await member.producer.publish('orders', `late-${i}`, { seq: 1 });
    await waitFor(() => mine(1) === 10, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: () =>
        `the next 10 messages (handled ${mine(1)}; status ${JSON.stringify(member.runtime.status())})`,
    });
    const group = (await api.get<DescribedGroup>('/v1/groups/late-answer')).body;
    expect(group.members.map((m) => m.memberId)).toEqual(['late']);
    expect(member.runtime.status().memberEpoch).toBe(group.members[0]?.memberEpoch);
  });
});
