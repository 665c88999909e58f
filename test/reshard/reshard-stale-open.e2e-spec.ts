import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { ReshardDriver } from '../../apps/coordinator/src/streams/reshard-driver.js';
import { CoordinatorReshardGroups } from '../../apps/coordinator/src/streams/reshard-groups.js';
import { ShardDataPlane } from '../../apps/coordinator/src/store/shard-data-plane.js';
import { startInProcessCoordinator } from '../coordinator/support/in-process-coordinator.js';
import { TestMember } from '../coordinator/support/test-member.js';
import {
  reshard,
  routingOf,
  useReshardCoordinator,
  waitReshardDone,
} from './support/reshard-cluster.js';
import { waitForNoProblems } from '../support/wait.js';

/**
 * Opening a new shard (`state=open` in its meta hash) is the one reshard action a lost write race
 * does not undo. A replica that pauses in `preparing` and resumes after the change was published,
 * completed, and a later reshard closed those shards must not reopen them: producers still on the
 * old routing would write into a shard nobody reads any more.
 */
describe('reshard: a replica resuming a stale preparing step', () => {
  const fx = useReshardCoordinator('reshard-stale-open', { STREAMS: 'orders:2,plain:1' });
  const meta = (stream: string, id: number): string => `${fx.prefix}:{${stream}:${id}}:meta`;

  it('does not reopen the shards a later reshard closed (nor recreate removed ones)', async () => {
    const api = fx.admin();
    // A group that will hold the second reshard in `draining` (its backlog on a closed shard).
    const holder = new TestMember(fx.member(), 'holder', 'h1', ['orders']);
    await holder.join();
    await fx.member().post('/v1/groups/holder/leave', { memberId: 'h1' });

    const paused = await startInProcessCoordinator({ prefix: fx.prefix });
    let atFaultPoint!: () => void;
    const reached = new Promise<void>((resolve) => (atFaultPoint = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    const stale = new ReshardDriver(
      paused.registry,
      new ShardDataPlane(paused.redis, paused.keys),
      new CoordinatorReshardGroups(paused.coordinator, paused.store),
      { now: () => Date.now() },
      {
        pollMs: 20,
        idleNoticeMs: 600_000,
        maxShards: 64,
        hooks: {
          afterDiscover: async () => {
            atFaultPoint();
            await resumed;
          },
        },
      },
      { log: () => undefined, warn: () => undefined },
    );
    try {
      // The paused replica persists the request (2 → 3: new shards 2, 3, 4) and stops at its
      // fault point; the coordinator process drives the change to the end meanwhile.
      const requested = stale.request('orders', { shards: 3, mode: 'strict' });
      await reached;
      expect((await waitReshardDone(api, 'orders', 30_000)).shards.map((s) => s.id)).toEqual([
        2, 3, 4,
      ]);
      // A second reshard (3 → 2) closes 2, 3, 4; the holder's backlog on 2 keeps it (closed).
      const key2 = `${fx.prefix}:{orders:2}`;
      await fx.redis().xadd(key2, '*', 'key', 'k', 'payload', '{}');
      await fx.redis().xgroup('CREATE', key2, 'holder', '0');
      await reshard(api, 'orders', 2);
      await waitForNoProblems(
        async () => {
          const s = (await routingOf(api, 'orders')).resharding;
          const left = s?.drain.filter((d) => !d.removed).map((d) => d.shard);
          return s?.state === 'draining' && left?.join() === '2' ? [] : [JSON.stringify(s)];
        },
        {
          timeoutMs: 30_000,
          message: 'shard 2 closed and kept for the holder, 3 and 4 removed',
          retryErrors: true,
        },
      );
      expect(await fx.redis().hget(meta('orders', 2), 'state')).toBe('closed');

      resume();
      await requested;
      expect(await fx.redis().hget(meta('orders', 2), 'state')).toBe('closed');
      expect(await fx.redis().exists(meta('orders', 3), meta('orders', 4))).toBe(0);
      const routing = await routingOf(api, 'orders');
      expect(routing.shards.map((s) => s.id)).toEqual([5, 6]);
      expect(routing.resharding?.drain.find((d) => d.shard === 2)?.removed).toBe(false);
    } finally {
      resume();
      await paused.close();
    }
  });

  it('the data plane opens a shard only once: a closed shard stays closed', async () => {
    const plane = new ShardDataPlane(fx.redis(), new KeySpace(fx.prefix));
    expect(await plane.open('plain', [7])).toEqual([]);
    expect(await fx.redis().hget(meta('plain', 7), 'state')).toBe('open');
    expect(await plane.open('plain', [7])).toEqual([]);
    await plane.close('plain', [7]);
    expect(await plane.open('plain', [7])).toEqual([7]);
    expect(await fx.redis().hget(meta('plain', 7), 'state')).toBe('closed');
  });
});
