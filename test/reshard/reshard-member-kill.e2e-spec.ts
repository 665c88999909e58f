import type { DescribedGroup, ReshardingStatus } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { describeGroup } from '../coordinator/support/coordinator-fixture.js';
import { checkHandled, readHandled } from '../support/handled-records.js';
import type { WorkerProcess } from '../support/worker-process.js';
import {
  diagnoseCluster,
  groupEvents,
  reshard,
  routingOf,
  useReshardCluster,
  waitHandled,
  waitReshardDone,
} from './support/reshard-cluster.js';
import { waitForNoProblems } from '../support/wait.js';

const SESSION_TIMEOUT_MS = 2000;

/**
 * A member is SIGKILLed while it drains an old shard with a backlog: after its session timeout
 * the coordinator removes it, the shard (still in the group's view: not drained) goes to another
 * member, which takes over the pending entries and finishes the drain; only then do the shard's
 * children start, so per-key order holds, and the reshard completes.
 */
describe('reshard: a member dies while draining an old shard', () => {
  const c = useReshardCluster('reshard-member-kill', {
    shards: 4,
    workers: 3,
    env: { SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS), HEARTBEAT_INTERVAL_MS: '200' },
    workerEnv: { HANDLER_DELAY_MS: '4' },
  });

  it('its successor finishes the drain after the session timeout; nothing lost, order kept', async () => {
    const api = c.admin();
    const load = c.load(150, 100);
    await load.start();
    await waitHandled(c.files, 200, 60_000);
    await load.burst(2400);
    await reshard(api, c.stream, 2);

    // An old shard that still has a backlog, and the member holding it.
    let victim: { shard: number; memberId: string } | undefined;
    await waitForNoProblems(
      async () => {
        const status = (await routingOf(api, c.stream)).resharding as ReshardingStatus | null;
        if (status?.state !== 'draining') return [`state ${status?.state}`];
        const group: DescribedGroup = await describeGroup(api, c.group);
        for (const d of status.drain.filter((x) => x.pendingGroups.includes(c.group))) {
          const [info] = (await c.redis().xinfo('GROUPS', d.key)) as unknown[][];
          const lag = Number(info?.[info.indexOf('lag') + 1] ?? 0);
          const owner = group.members.find((m) =>
            m.assignment.some((a) => a.shards.includes(d.shard)),
          );
          if (owner && lag > 150) {
            victim = { shard: d.shard, memberId: owner.memberId };
            return [];
          }
        }
        return ['no old shard with a backlog of > 150 held by a member'];
      },
      {
        timeoutMs: 20_000,
        intervalMs: 20,
        message: 'an old shard with a backlog, held by a member',
        retryErrors: true,
      },
    );
    const { shard, memberId } = victim as { shard: number; memberId: string };
    let worker: WorkerProcess | undefined;
    for (const w of c.workers) if ((await w.status()).memberId === memberId) worker = w;
    expect(worker, `worker of ${memberId}`).toBeDefined();
    await worker?.kill();
    // After the exit: nothing of the victim can start later than this.
    const killedAt = Date.now();

    const final = await waitReshardDone(api, c.stream, 60_000);
    expect(final.shards.map((s) => s.id)).toEqual([4, 5]);
    await load.stop();
    expect(load.errors.map((e) => e.message)).toEqual([]);
    await waitHandled(c.files, load.sent, 60_000, () => diagnoseCluster(c));
    const check = checkHandled(c.files, new Map(load.seqs));
    expect(check.missing, check.missingSample.join(', ')).toBe(0);
    expect(check.orderViolations).toEqual([]);
    expect(check.ownerOverlaps).toEqual([]);
    // Where a key moved to a new shard, its next message waited for the old one's ack.
    expect(check.handledBeforeParentAck).toEqual([]);
    expect(check.transitions).toBeGreaterThan(50);

    // The successor handled the rest of the victim's shard, after the session timeout.
    const after = readHandled(c.files).filter((l) => l.s === shard && l.t0 > killedAt);
    expect(after.length).toBeGreaterThan(0);
    expect(new Set(after.map((l) => l.m)).has(memberId)).toBe(false);
    const firstBySuccessor = Math.min(...after.map((l) => l.t0));
    expect(firstBySuccessor - killedAt).toBeGreaterThan(SESSION_TIMEOUT_MS * 0.8);
    const events = await groupEvents(api, c.group);
    expect(events.some((e) => e.type === 'MEMBER_EXPIRED' && e.data.memberId === memberId)).toBe(
      true,
    );
    expect(events.some((e) => e.type === 'RESHARD_SHARD_DRAINED' && e.data.shard === shard)).toBe(
      true,
    );
  });
});
