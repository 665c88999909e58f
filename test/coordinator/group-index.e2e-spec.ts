import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HeartbeatRequest } from '@redis-stream-coordinator/nestjs/protocol';
import { SessionTimers } from '../../apps/coordinator/src/groups/session-timers.js';
import { useRedisPrefix } from '../support/redis.js';
import {
  type InProcessCoordinator,
  startInProcessCoordinator,
} from './support/in-process-coordinator.js';

const join = (memberId: string): HeartbeatRequest => ({
  memberId,
  memberEpoch: 0,
  rebalanceTimeoutMs: 10_000,
  subscribedStreams: ['orders'],
  ownedShards: [],
});

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/**
 * The index of groups (what the timers, reshards, lists and metrics iterate) across replicas: a
 * group that exists always ends up indexed, whatever a delete on one replica and a create on
 * another interleave to, and the session timers repair what a crash in between leaves behind.
 */
describe('the index of groups', () => {
  const redis = useRedisPrefix('group-index');
  let one: InProcessCoordinator;
  let two: InProcessCoordinator;

  beforeAll(async () => {
    one = await startInProcessCoordinator({ prefix: redis.prefix, streams: { orders: 2 } });
    two = await startInProcessCoordinator({ prefix: redis.prefix });
  });
  afterAll(async () => {
    await Promise.all([one?.close(), two?.close()]);
  });

  const indexed = async (): Promise<string[]> => one.store.listGroupIds();

  it('a group created on one replica while another deletes its old incarnation stays indexed', async () => {
    const g = 'g-race';
    await one.coordinator.heartbeat(g, join('x'), null);
    await one.coordinator.heartbeat(g, { memberId: 'x', memberEpoch: -1 }, null);
    expect(await indexed()).toContain(g);

    // Replica two's delete stops right after its delete script, before it touches the index.
    const reached = gate();
    const resume = gate();
    const srem = two.redis.srem.bind(two.redis);
    two.redis.srem = (async (...args: Parameters<typeof srem>) => {
      reached.open();
      await resume.opened;
      return srem(...args);
    }) as typeof srem;
    try {
      const deleting = two.coordinator.deleteGroup(g);
      await reached.opened;
      expect((await two.store.load(g)).exists).toBe(false);
      // Meanwhile a member creates the group again through replica one.
      await one.coordinator.heartbeat(g, join('y'), null);
      resume.open();
      await deleting;
    } finally {
      two.redis.srem = srem;
    }
    expect((await one.coordinator.read(g)).exists).toBe(true);
    expect(await indexed()).toContain(g);
  });

  it('the session timers index an existing group the index lost, and drop deleted ones', async () => {
    const g = 'g-lost';
    await one.coordinator.heartbeat(g, join('x'), null);
    // As if the replica that created it died between its commit and the index write.
    await one.redis.srem(one.keys.groupsIndexKey(), g);
    // …and as if a replica died between a delete and its index removal.
    await one.redis.sadd(one.keys.groupsIndexKey(), 'g-gone');
    expect(await indexed()).not.toContain(g);

    const warnings: string[] = [];
    const timers = new SessionTimers(one.store, one.coordinator, 1000, {
      warn: (message) => warnings.push(message),
    });
    await timers.tick();
    expect(await indexed()).toContain(g);
    expect(await indexed()).not.toContain('g-gone');
    expect(warnings.join('\n')).toContain(`group ${g} exists but was not in the index`);
  });
});
