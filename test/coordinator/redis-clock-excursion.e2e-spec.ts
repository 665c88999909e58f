import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { SessionTimers } from '../../apps/coordinator/src/groups/session-timers.js';
import {
  startSteppableClockRedis,
  type SteppableClockRedis,
} from '../support/redis-clock/steppable-clock-redis.js';
import { uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from './support/in-process-coordinator.js';

const SESSION_TIMEOUT_MS = 1000;
/** The excursion: ten session timeouts back. */
const STEP_MS = 10_000;

const join = (memberId: string): HeartbeatRequest => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs: 10_000,
  subscribedStreams: ['orders'],
  ownedShards: [],
});

/**
 * A step of the Redis clock back and forward again that both fall between two scans of one
 * replica (docs/protocol.md §4.6): the replica's own comparison of clocks sees nothing, but a
 * heartbeat made in between was timed on the clock while it was back. The replica's timers are
 * driven by hand (`tick`), so the two steps land exactly between two of its scans.
 */
describe('a Redis clock excursion back between two scans', () => {
  const prefix = uniquePrefix('clockexc');
  let redis: SteppableClockRedis;
  let replica: InProcessCoordinator;
  const warnings: string[] = [];
  let timers: SessionTimers;

  beforeAll(async () => {
    redis = await startSteppableClockRedis();
    replica = await startInProcessCoordinator({
      prefix,
      redisUrl: redis.url,
      streams: { orders: 4 },
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: 200,
    });
    timers = new SessionTimers(replica.store, replica.coordinator, 60_000, {
      warn: (message) => warnings.push(message),
    });
  });
  afterAll(async () => {
    await timers?.stop();
    await replica?.close();
    await redis?.dispose();
  });

  const members = async (group: string): Promise<string[]> =>
    [...(await replica.coordinator.read(group)).state.members.keys()].sort();
  const beat = async (group: string, memberId: string, epoch: number): Promise<void> => {
    await replica.coordinator.heartbeat(group, { memberId, memberEpoch: epoch }, null);
  };

  it('keeps a member that heartbeated while the clock was back, and still expires one that stopped', async () => {
    const group = 'g-excursion';
    const live = (await replica.coordinator.heartbeat(
      group,
      join('live'),
      null,
    )) as HeartbeatResponse;
    const gone = (await replica.coordinator.heartbeat(
      group,
      join('gone'),
      null,
    )) as HeartbeatResponse;
    // The timers' fresh period (a session from their first scan) runs out; `live` heartbeats
    // throughout, `gone` too until the excursion.
    await timers.tick();
    const firstScanAt = Date.now();
    await waitFor(
      async () => {
        await beat(group, 'live', live.memberEpoch);
        await beat(group, 'gone', gone.memberEpoch);
        await timers.tick();
        return Date.now() - firstScanAt > SESSION_TIMEOUT_MS + 100;
      },
      { timeoutMs: SESSION_TIMEOUT_MS * 5, intervalMs: 100, message: 'the fresh period ran out' },
    );
    expect(warnings).toEqual([]);
    expect(await members(group)).toEqual(['gone', 'live']);

    // Between two scans: the clock steps back, `live` heartbeats, the clock steps forward again.
    redis.setOffset(redis.offsetMs - STEP_MS);
    await beat(group, 'live', live.memberEpoch);
    redis.setOffset(redis.offsetMs + STEP_MS);
    const restoredAt = Date.now();

    // `live` looks ten sessions old on the restored clock; it heartbeated a moment ago.
    await timers.tick();
    expect(await members(group)).toEqual(['gone', 'live']);
    expect(warnings.join('\n')).toContain('stepped back');

    // It goes on heartbeating; `gone` does not, and is expired a session after the clock came
    // back (not ten).
    await waitFor(
      async () => {
        await beat(group, 'live', live.memberEpoch);
        await timers.tick();
        return !(await members(group)).includes('gone');
      },
      { timeoutMs: SESSION_TIMEOUT_MS * 4, intervalMs: 100, message: '`gone` expired' },
    );
    expect(Date.now() - restoredAt).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 50);
    expect(await members(group)).toEqual(['live']);
  });

  it('carries the record of a step back across the group being deleted and created again', async () => {
    const group = 'g-recreated';
    const first = (await replica.coordinator.heartbeat(
      group,
      join('old'),
      null,
    )) as HeartbeatResponse;
    await beat(group, 'old', first.memberEpoch);
    // (the timers read the list of groups every 8th tick: now they scan this one too)
    for (let i = 0; i < 8; i++) await timers.tick();

    // While the clock is back: the last member leaves, the group is deleted, and created again.
    redis.setOffset(redis.offsetMs - STEP_MS);
    await replica.coordinator.heartbeat(group, { memberId: 'old', memberEpoch: -1 }, null);
    await replica.coordinator.deleteGroup(group);
    expect(await members(group)).toEqual([]);
    const again = (await replica.coordinator.heartbeat(
      group,
      join('new'),
      null,
    )) as HeartbeatResponse;
    await beat(group, 'new', again.memberEpoch);
    redis.setOffset(redis.offsetMs + STEP_MS);

    // `new` looks ten sessions old; the re-created group still knows the clock was back.
    const scan = await replica.store.scan(group, SESSION_TIMEOUT_MS);
    expect(scan.stale.map((m) => m.memberId)).toEqual(['new']);
    expect(scan.clockRestored?.backMs).toBeGreaterThan(STEP_MS - 1000);
    const logged = warnings.length;
    await timers.tick();
    expect(await members(group)).toEqual(['new']);
    expect(warnings.slice(logged).join('\n')).toContain(
      `group ${group}: the Redis clock stepped back`,
    );
  });

  it('a scan of a group that does not exist writes nothing', async () => {
    const group = 'g-never';
    const scan = await replica.store.scan(group, SESSION_TIMEOUT_MS);
    expect(scan).toMatchObject({ version: 0, stale: [], clockRestored: null });
    expect(await replica.redis.exists(replica.keys.groupMetaKey(group))).toBe(0);
  });
});
