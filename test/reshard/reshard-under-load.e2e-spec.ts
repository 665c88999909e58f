import { describe, expect, it } from 'vitest';
import type { ReshardingStatus, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { checkHandled, handledCount } from '../support/handled-records.js';
import {
  diagnoseCluster,
  groupEvents,
  reshard,
  routingOf,
  streamEvents,
  useReshardCluster,
  waitHandled,
  waitReshardDone,
} from './support/reshard-cluster.js';

/**
 * Resharding under a steady keyed load with three real member processes: 8 → 16 → 4 → 5 while
 * the producer keeps writing. Afterwards every message was handled, per key in sequence order,
 * no shard was ever handled by two members at once, and the producer never saw an error.
 */
describe('reshard under load (3 members, steady producer)', () => {
  const c = useReshardCluster('reshard-load', {
    shards: 8,
    workers: 3,
    workerEnv: { HANDLER_DELAY_MS: '1' },
  });

  it('8 → 16 → 4 → 5: nothing lost, per-key order kept, one owner per shard, no producer error', async () => {
    const api = c.admin();
    const redis = c.redis();
    const dlq = `${c.prefix}:{orders}:dlq`;
    await redis.xadd(dlq, '*', 'marker', 'kept');
    const load = c.load(400, 200);
    await load.start();
    const timeline: Array<{ to: number; statuses: ReshardingStatus[]; final: StreamRouting }> = [];
    for (const to of [16, 4, 5]) {
      // Let the load run on the current layout first.
      const mark = handledCount(c.files) + 500;
      await waitHandled(c.files, mark, 60_000);
      // A backlog in the old shards, so the new shards' first messages of many keys wait for it.
      await load.burst(1500);
      const before = await routingOf(api, c.stream);
      const accepted = await reshard(api, c.stream, to);
      expect(accepted.routingEpoch).toBe(before.routingEpoch + 1);
      expect(accepted.shards.map((s) => s.id)).toEqual(
        Array.from({ length: to }, (_, i) => Math.max(...before.shards.map((s) => s.id)) + 1 + i),
      );
      expect(accepted.resharding).toMatchObject({
        mode: 'strict',
        keyOrder: 'kept',
        toShards: accepted.shards.map((s) => s.id),
      });
      const statuses: ReshardingStatus[] = [accepted.resharding as ReshardingStatus];
      // Watch progress until done.
      for (;;) {
        const r = await routingOf(api, c.stream);
        if (r.resharding === null) break;
        statuses.push(r.resharding);
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (statuses.length > 400)
          throw new Error(`reshard to ${to} did not complete: ${JSON.stringify(r.resharding)}`);
      }
      const final = await waitReshardDone(api, c.stream, 60_000);
      expect(final.shards.length).toBe(to);
      expect(final.routing.ranges.map((x) => x.shard)).toEqual(final.shards.map((s) => s.id));
      timeline.push({ to, statuses, final });
    }
    await load.stop();
    expect(load.errors.map((e) => e.message)).toEqual([]);
    const sent = new Map(load.seqs);
    await waitHandled(c.files, load.sent, 60_000, () => diagnoseCluster(c));

    const check = checkHandled(c.files, sent);
    expect(check.missing, check.missingSample.join(', ')).toBe(0);
    expect(check.orderViolations).toEqual([]);
    expect(check.ownerOverlaps).toEqual([]);
    // Where a key moved to a new shard, its next message waited for the old one's ack.
    expect(check.handledBeforeParentAck).toEqual([]);
    expect(check.transitions).toBeGreaterThan(50);
    expect(check.transitionsWithoutAck).toBe(0);
    expect(load.sent).toBeGreaterThan(6000);

    // The status showed the drain as it happened; the old shards' keys are gone, the DLQ kept.
    for (const { statuses } of timeline) {
      expect(statuses.some((s) => s.state === 'draining')).toBe(true);
      expect(statuses.some((s) => s.drain.some((d) => d.drainedGroups.includes(c.group)))).toBe(
        true,
      );
    }
    const finalIds = timeline.at(-1)?.final.shards.map((s) => s.id) ?? [];
    expect(finalIds).toEqual([28, 29, 30, 31, 32]);
    for (let id = 0; id < 28; id++) {
      expect(
        await redis.exists(`${c.prefix}:{orders:${id}}`, `${c.prefix}:{orders:${id}}:meta`),
        `shard ${id} keys`,
      ).toBe(0);
    }
    for (const id of finalIds)
      expect(await redis.hget(`${c.prefix}:{orders:${id}}:meta`, 'state')).toBe('open');
    expect(await redis.xlen(dlq)).toBe(1);
    // Only the final shards were handled after the last reshard began... and every shard was handled by someone.
    for (const id of [...Array(33).keys()].filter((i) => i < 8 || i >= 24)) {
      expect(check.handlersByShard.get(id)?.size ?? 0, `shard ${id} handled`).toBeGreaterThan(0);
    }

    // Event logs: the stream's and the group's carry every step; epoch bumps say why.
    const streamTypes = (await streamEvents(redis, c.prefix, c.stream)).map((e) => e.type);
    expect(streamTypes[0]).toBe('STREAM_CREATED');
    for (const type of [
      'RESHARD_REQUESTED',
      'RESHARD_STARTED',
      'RESHARD_SHARDS_CLOSED',
      'RESHARD_COMPLETED',
    ]) {
      expect(streamTypes.filter((t) => t === type).length, type).toBe(3);
    }
    expect(streamTypes.filter((t) => t === 'RESHARD_SHARD_REMOVED').length).toBe(8 + 16 + 4);
    const events = await groupEvents(api, c.group);
    const types = events.map((e) => e.type);
    for (const type of ['RESHARD_STARTED', 'RESHARD_SHARDS_CLOSED', 'RESHARD_COMPLETED']) {
      expect(types.filter((t) => t === type).length, type).toBeGreaterThanOrEqual(3);
    }
    expect(types.filter((t) => t === 'RESHARD_SHARD_DRAINED').length).toBeGreaterThanOrEqual(28);
    const reasons = events
      .filter((e) => e.type === 'TARGET_ASSIGNMENT_CHANGED')
      .map((e) => e.data.reason);
    expect(reasons).toContain('reshard');
    expect(
      events.filter((e) => e.type === 'GROUP_EPOCH_BUMPED').map((e) => e.data.reason),
    ).toContain('reshard');
  });
});
