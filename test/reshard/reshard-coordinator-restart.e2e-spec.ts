import type { ReshardingStatus } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { checkHandled, handledCount } from '../support/handled-records.js';
import {
  diagnoseCluster,
  reshard,
  routingOf,
  streamEvents,
  useReshardCluster,
  waitHandled,
  waitReshardDone,
} from './support/reshard-cluster.js';
import { waitForNoProblems } from '../support/wait.js';

/**
 * The coordinator is SIGKILLed while old shards are still draining and started again: the
 * restarted coordinator resumes the reshard from its persisted state and completes it, members
 * keep handling their shards meanwhile, and nothing is lost or reordered.
 */
describe('reshard survives a coordinator crash', () => {
  const c = useReshardCluster('reshard-restart', {
    shards: 4,
    workers: 3,
    workerEnv: { HANDLER_DELAY_MS: '3' },
  });

  it('SIGKILL mid-drain, restart: the reshard completes, order kept, nothing lost', async () => {
    const api = c.admin();
    const load = c.load(200, 100);
    await load.start();
    await waitHandled(c.files, 200, 60_000);
    await load.burst(2500);
    const accepted = await reshard(api, c.stream, 6);
    // The producer has moved to the new layout (its STALE_ROUTING refresh needs a coordinator).
    await waitForNoProblems(
      () => (load.routingEpoch === accepted.routingEpoch ? [] : [`epoch ${load.routingEpoch}`]),
      {
        timeoutMs: 10_000,
        intervalMs: 10,
        message: 'producer on the new routing',
        retryErrors: true,
      },
    );
    let seen: ReshardingStatus | null = null;
    await waitForNoProblems(
      async () => {
        seen = (await routingOf(api, c.stream)).resharding;
        return seen?.state === 'draining' && seen.drain.some((d) => d.pendingGroups.length > 0)
          ? []
          : [JSON.stringify(seen)];
      },
      {
        timeoutMs: 20_000,
        intervalMs: 20,
        message: 'old shards draining with work left',
        retryErrors: true,
      },
    );
    await c.coordinator().kill();
    // Members keep handling what they own while the coordinator is away.
    const during = handledCount(c.files);
    await waitHandled(c.files, during + 100, 10_000);
    await c.coordinator().restart();
    const final = await waitReshardDone(api, c.stream, 60_000);
    expect(final.shards.map((s) => s.id)).toEqual([4, 5, 6, 7, 8, 9]);

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
    expect(check.transitionsWithoutAck).toBe(0);

    const types = (await streamEvents(c.redis(), c.prefix, c.stream)).map((e) => e.type);
    expect(types.filter((t) => t === 'RESHARD_STARTED')).toHaveLength(1);
    expect(types.filter((t) => t === 'RESHARD_COMPLETED')).toHaveLength(1);
    expect(types.filter((t) => t === 'RESHARD_SHARD_REMOVED')).toHaveLength(4);
    for (let id = 0; id < 4; id++)
      expect(await c.redis().exists(`${c.prefix}:{orders:${id}}`)).toBe(0);
  });
});
