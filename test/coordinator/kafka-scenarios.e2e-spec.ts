import { describe, expect, it } from 'vitest';
import {
  type DescribedGroup,
  type GroupEventEntry,
  type GroupListing,
  type HeartbeatResponse,
  ID_PATTERN,
  KeySpace,
  type LeaveResponse,
  murmur3x86_32,
  type ProtocolErrorBody,
  RoutingTable,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { createTestRedis } from '../support/redis.js';
import {
  allEvents,
  describeGroup,
  expectedGroupState,
  fenceOwner,
  heartbeat,
  joinRequest,
  memberOf,
  ok,
  refused,
  shardsOf,
  snapshotKeys,
  useCoordinator,
} from './support/coordinator-fixture.js';
import { settle, TestMember } from './support/test-member.js';
import { pollUntil } from '../support/wait.js';

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Checks the reported group state against docs/protocol.md §6.4 and returns it. */
async function stateOf(
  api: Parameters<typeof describeGroup>[0],
  group: string,
): Promise<DescribedGroup> {
  const described = await describeGroup(api, group);
  expect(described.state).toBe(expectedGroupState(described));
  for (const m of described.members) {
    if (m.memberEpoch !== -2) {
      expect(m.memberEpoch).toBeLessThanOrEqual(described.assignmentEpoch);
    }
  }
  expect(described.assignmentEpoch).toBeLessThanOrEqual(described.groupEpoch);
  return described;
}

/** The keys of a group, and the `<prefix>:{@g:<group>}` stem they all start with. */
function groupKeys(prefix: string, group: string) {
  const keys = new KeySpace(prefix);
  return {
    stem: keys.groupMetaKey(group).slice(0, -':meta'.length),
    meta: keys.groupMetaKey(group),
    members: keys.groupMembersKey(group),
    targets: keys.groupTargetsKey(group),
    seen: keys.groupSeenKey(group),
  };
}

function types(events: readonly GroupEventEntry[]): string[] {
  return events.map((e) => e.type);
}

describe('Kafka KIP-848 scenarios over HTTP (default timeouts)', () => {
  const fx = useCoordinator('kafka-scn', {
    STREAMS: 'orders:4,payments:2',
    SESSION_TIMEOUT_MS: '120000',
  });
  const key = (stream: string, shard: number): string => `${fx.prefix}:{${stream}:${shard}}`;

  it('first join creates the group: epoch 1, the full assignment with keys, describe exactly per docs/protocol.md §6.3', async () => {
    const api = fx.member();
    const missing = await api.get<ProtocolErrorBody>('/v1/groups/g-first');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('GROUP_ID_NOT_FOUND');

    const before = Date.now();
    const res = await heartbeat(api, 'g-first', joinRequest('a', ['payments', 'orders']));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      memberId: 'a',
      memberEpoch: 1,
      heartbeatIntervalMs: 3000,
      sessionTimeoutMs: 120_000,
      assignment: {
        shards: [
          {
            stream: 'orders',
            shards: [0, 1, 2, 3],
            keys: [0, 1, 2, 3].map((s) => key('orders', s)),
          },
          { stream: 'payments', shards: [0, 1], keys: [0, 1].map((s) => key('payments', s)) },
        ],
      },
      diff: {
        added: [
          { stream: 'orders', shards: [0, 1, 2, 3] },
          { stream: 'payments', shards: [0, 1] },
        ],
        revoking: [],
        awaitingRelease: [],
      },
    });

    const described = await stateOf(api, 'g-first');
    expect(Object.keys(described).sort()).toEqual([
      'assignmentEpoch',
      'assignor',
      'groupEpoch',
      'groupId',
      'members',
      'state',
    ]);
    const all = [
      { stream: 'orders', shards: [0, 1, 2, 3] },
      { stream: 'payments', shards: [0, 1] },
    ];
    expect(described).toEqual({
      groupId: 'g-first',
      state: 'STABLE',
      groupEpoch: 1,
      assignmentEpoch: 1,
      assignor: 'uniform',
      members: [
        {
          memberId: 'a',
          instanceId: null,
          rackId: null,
          memberEpoch: 1,
          state: 'STABLE',
          subscribedStreams: ['orders', 'payments'],
          assignment: all,
          pendingRevocation: [],
          target: all,
          lastHeartbeatAt: expect.stringMatching(ISO_8601) as unknown as string,
          clientHost: '127.0.0.1',
        },
      ],
    });
    const seenAt = Date.parse(described.members[0]?.lastHeartbeatAt ?? '');
    expect(seenAt).toBeGreaterThanOrEqual(before - 1000);
    expect(seenAt).toBeLessThanOrEqual(Date.now() + 1000);

    for (const s of [0, 1, 2, 3])
      expect(await fenceOwner(fx.redis(), key('orders', s), 'g-first')).toBe('a');
    for (const s of [0, 1])
      expect(await fenceOwner(fx.redis(), key('payments', s), 'g-first')).toBe('a');

    const events = await allEvents(api, 'g-first');
    expect(types(events)).toEqual(
      expect.arrayContaining([
        'MEMBER_JOINED',
        'GROUP_EPOCH_BUMPED',
        'TARGET_ASSIGNMENT_CHANGED',
        'SHARDS_ASSIGNED',
      ]),
    );
  });

  it('scale-out hands shards over revoke → release → assign, step by step', async () => {
    const api = fx.member();
    const g = 'g-scale';
    const a = new TestMember(api, g, 'a', ['orders']);
    await a.join();
    expect(a.shards('orders')).toEqual([0, 1, 2, 3]);

    // b joins: epoch 2, nothing yet (all four are a's), two shards awaiting release.
    const bJoin = await ok(api, g, joinRequest('b', ['orders']));
    expect(bJoin.memberEpoch).toBe(2);
    expect(bJoin.assignment).toEqual({ shards: [] });
    expect(bJoin.diff.added).toEqual([]);
    const bTarget = shardsOf(bJoin.diff.awaitingRelease, 'orders');
    expect(bTarget).toHaveLength(2);
    const aKeeps = [0, 1, 2, 3].filter((s) => !bTarget.includes(s));
    let d = await stateOf(api, g);
    expect(d.state).toBe('RECONCILING');
    expect({ groupEpoch: d.groupEpoch, assignmentEpoch: d.assignmentEpoch }).toEqual({
      groupEpoch: 2,
      assignmentEpoch: 2,
    });
    expect(memberOf(d, 'a')).toMatchObject({
      memberEpoch: 1,
      state: 'STABLE',
      assignment: [{ stream: 'orders', shards: [0, 1, 2, 3] }],
      target: [{ stream: 'orders', shards: aKeeps }],
    });
    expect(memberOf(d, 'b')).toMatchObject({
      memberEpoch: 2,
      state: 'UNRELEASED_SHARDS',
      assignment: [],
      target: [{ stream: 'orders', shards: bTarget }],
    });

    // a heartbeats: told to revoke b's shards, keeps epoch 1, gets its reduced assignment.
    const revoke = await ok(api, g, { memberId: 'a', memberEpoch: 1 });
    expect(revoke.memberEpoch).toBe(1);
    expect(revoke.assignment?.shards).toEqual([
      { stream: 'orders', shards: aKeeps, keys: aKeeps.map((s) => key('orders', s)) },
    ]);
    expect(revoke.diff).toEqual({
      added: [],
      revoking: [{ stream: 'orders', shards: bTarget }],
      awaitingRelease: [],
    });
    d = await stateOf(api, g);
    expect(d.state).toBe('RECONCILING');
    expect(memberOf(d, 'a')).toMatchObject({
      memberEpoch: 1,
      state: 'UNREVOKED_SHARDS',
      assignment: [{ stream: 'orders', shards: aKeeps }],
      pendingRevocation: [{ stream: 'orders', shards: bTarget }],
    });
    // Still fenced to a: b may not take them before a releases.
    for (const s of bTarget) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('a');

    // b heartbeats before a acknowledged: still nothing.
    const bWaits = await ok(api, g, { memberId: 'b', memberEpoch: 2 });
    expect(bWaits.assignment).toBeUndefined();
    expect(bWaits.diff.awaitingRelease).toEqual([{ stream: 'orders', shards: bTarget }]);
    expect(memberOf(await stateOf(api, g), 'b').assignment).toEqual([]);

    // a acknowledges (owns only what it keeps): epoch 2, STABLE; the revoked shards are released.
    const ack = await ok(api, g, {
      memberId: 'a',
      memberEpoch: 1,
      ownedShards: [{ stream: 'orders', shards: aKeeps }],
    });
    expect(ack.memberEpoch).toBe(2);
    expect(ack.diff.revoking).toEqual([]);
    d = await stateOf(api, g);
    expect(d.state).toBe('RECONCILING');
    expect(memberOf(d, 'a')).toMatchObject({
      memberEpoch: 2,
      state: 'STABLE',
      pendingRevocation: [],
    });
    for (const s of bTarget)
      expect(await fenceOwner(fx.redis(), key('orders', s), g)).not.toBe('a');
    for (const s of aKeeps) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('a');

    // b heartbeats: gets its two shards; the group is STABLE at epoch 2.
    const bGets = await ok(api, g, { memberId: 'b', memberEpoch: 2 });
    expect(bGets.memberEpoch).toBe(2);
    expect(bGets.assignment?.shards).toEqual([
      { stream: 'orders', shards: bTarget, keys: bTarget.map((s) => key('orders', s)) },
    ]);
    expect(bGets.diff).toEqual({
      added: [{ stream: 'orders', shards: bTarget }],
      revoking: [],
      awaitingRelease: [],
    });
    d = await stateOf(api, g);
    expect(d.state).toBe('STABLE');
    expect(memberOf(d, 'b')).toMatchObject({
      memberEpoch: 2,
      state: 'STABLE',
      assignment: [{ stream: 'orders', shards: bTarget }],
    });
    for (const s of bTarget) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('b');

    const events = await allEvents(api, g);
    const t = types(events);
    const bJoined = events.findIndex((e) => e.type === 'MEMBER_JOINED' && e.data.memberId === 'b');
    const aRevoked = events.findIndex(
      (e) => e.type === 'SHARDS_REVOKED' && e.data.memberId === 'a',
    );
    const bAssigned = events.findIndex(
      (e) => e.type === 'SHARDS_ASSIGNED' && e.data.memberId === 'b',
    );
    expect(t).toEqual(expect.arrayContaining(['GROUP_EPOCH_BUMPED', 'TARGET_ASSIGNMENT_CHANGED']));
    expect(bJoined).toBeGreaterThanOrEqual(0);
    expect(aRevoked).toBeGreaterThan(bJoined);
    expect(bAssigned).toBeGreaterThan(aRevoked);
    // Every event of the scale-out carries the group epoch it was written at.
    expect(events.at(-1)?.groupEpoch).toBe(2);
  });

  it('fences stale and future epochs; the previous epoch only with ownedShards ⊆ assignment', async () => {
    const api = fx.member();
    const g = 'g-fence';
    const a = new TestMember(api, g, 'a', ['orders']);
    const b = new TestMember(api, g, 'b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    expect(a.epoch).toBe(2);
    const snapshot = await snapshotKeys(fx.redis(), fx.prefix);

    // Future epoch.
    await refused(api, g, { memberId: 'a', memberEpoch: 3 }, 409, 'FENCED_MEMBER_EPOCH');
    // Previous epoch without ownedShards, or with a shard a does not hold.
    await refused(api, g, { memberId: 'a', memberEpoch: 1 }, 409, 'FENCED_MEMBER_EPOCH');
    await refused(
      api,
      g,
      {
        memberId: 'a',
        memberEpoch: 1,
        ownedShards: [
          { stream: 'orders', shards: [...a.shards('orders'), b.shards('orders')[0] ?? -1] },
        ],
      },
      409,
      'FENCED_MEMBER_EPOCH',
    );
    // Unknown member.
    await refused(api, g, { memberId: 'ghost', memberEpoch: 1 }, 409, 'UNKNOWN_MEMBER_ID');
    await refused(api, g, { memberId: 'ghost', memberEpoch: -1 }, 409, 'UNKNOWN_MEMBER_ID');
    // A fenced request writes nothing.
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(snapshot);

    // Previous epoch with a subset of the assignment: a lost response, accepted.
    const lost = await ok(api, g, {
      memberId: 'a',
      memberEpoch: 1,
      ownedShards: [{ stream: 'orders', shards: a.shards('orders').slice(0, 1) }],
    });
    expect(lost.memberEpoch).toBe(2);

    // c joins; a and b move to epoch 3. Then epoch 1 is stale (not the previous one) even with a subset.
    const c = new TestMember(api, g, 'c', ['orders']);
    await c.join();
    await settle(api, g, [a, b, c]);
    expect(a.epoch).toBe(3);
    await refused(
      api,
      g,
      {
        memberId: 'a',
        memberEpoch: 1,
        ownedShards: [{ stream: 'orders', shards: a.shards('orders') }],
      },
      409,
      'FENCED_MEMBER_EPOCH',
    );
    const prev = await ok(api, g, {
      memberId: 'a',
      memberEpoch: 2,
      ownedShards: [{ stream: 'orders', shards: a.shards('orders') }],
    });
    expect(prev.memberEpoch).toBe(3);
    expect((await stateOf(api, g)).state).toBe('STABLE');
  });

  it('GROUP_ID_NOT_FOUND for any epoch ≠ 0 on a missing group, and nothing is created', async () => {
    const api = fx.member();
    for (const memberEpoch of [1, 7, -1]) {
      await refused(api, 'g-nowhere', { memberId: 'a', memberEpoch }, 404, 'GROUP_ID_NOT_FOUND');
    }
    await refused(
      api,
      'g-nowhere',
      { memberId: 'a', memberEpoch: -2, instanceId: 'i' },
      404,
      'GROUP_ID_NOT_FOUND',
    );
    const leave = await api.post<ProtocolErrorBody>('/v1/groups/g-nowhere/leave', {
      memberId: 'a',
    });
    expect([leave.status, leave.body.error.code]).toEqual([404, 'GROUP_ID_NOT_FOUND']);
    expect((await api.get('/v1/groups/g-nowhere')).status).toBe(404);
    const list = await api.get<{ groups: GroupListing[] }>('/v1/groups');
    expect(list.body.groups.map((x) => x.groupId)).not.toContain('g-nowhere');
    expect(await fx.redis().exists(groupKeys(fx.prefix, 'g-nowhere').meta)).toBe(0);
  });

  it('leave (-1 and the leave route) frees the shards at once', async () => {
    const api = fx.member();
    const g = 'g-leave';
    const a = new TestMember(api, g, 'a', ['orders']);
    const b = new TestMember(api, g, 'b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    const aHad = a.shards('orders');
    const epochBefore = (await describeGroup(api, g)).groupEpoch;

    const left = await heartbeat<LeaveResponse>(api, g, { memberId: 'a', memberEpoch: -1 });
    expect(left.status).toBe(200);
    expect(left.body).toEqual({ memberId: 'a', memberEpoch: -1 });
    let d = await stateOf(api, g);
    expect(d.members.map((m) => m.memberId)).toEqual(['b']);
    expect(d.groupEpoch).toBe(epochBefore + 1);
    for (const s of aHad) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBeNull();
    // b picks up a's shards on its very next heartbeat: nobody holds them any more.
    const bAll = await b.beat();
    expect(bAll.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
    expect(shardsOf(bAll.diff.added, 'orders')).toEqual(aHad);
    d = await stateOf(api, g);
    expect(d.state).toBe('STABLE');
    for (const s of [0, 1, 2, 3])
      expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('b');
    await refused(api, g, { memberId: 'a', memberEpoch: a.epoch }, 409, 'UNKNOWN_MEMBER_ID');

    // The leave route: memberEpoch is optional and not fenced.
    const routeLeave = await api.post<LeaveResponse>(`/v1/groups/${g}/leave`, {
      memberId: 'b',
      memberEpoch: 99,
    });
    expect(routeLeave.status).toBe(200);
    expect(routeLeave.body).toEqual({ memberId: 'b', memberEpoch: -1 });
    d = await stateOf(api, g);
    expect(d).toMatchObject({ state: 'EMPTY', groupEpoch: epochBefore + 2, members: [] });
    for (const s of [0, 1, 2, 3])
      expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBeNull();
    const left2 = (await allEvents(api, g))
      .filter((e) => e.type === 'MEMBER_LEFT')
      .map((e) => e.data.memberId);
    expect(left2).toEqual(['a', 'b']);
  });

  it('rebalance timeout: a member that never acknowledges its revocation is removed after rebalanceTimeoutMs', async () => {
    const api = fx.member();
    const g = 'g-rebalance-timeout';
    const a = new TestMember(api, g, 'a', ['orders'], { rebalanceTimeoutMs: 800 });
    await a.join();
    await ok(api, g, joinRequest('b', ['orders']));
    const revoking = await ok(api, g, { memberId: 'a', memberEpoch: 1 });
    const revokeAt = Date.now();
    expect(revoking.diff.revoking[0]?.shards).toHaveLength(2);
    // a keeps heartbeating but keeps reporting the revoked shards: the timer is not restarted.
    const removed = await pollUntil(
      async () => {
        const r = await heartbeat<HeartbeatResponse | ProtocolErrorBody>(api, g, {
          memberId: 'a',
          memberEpoch: 1,
          ownedShards: [{ stream: 'orders', shards: [0, 1, 2, 3] }],
        });
        if (r.status === 200)
          expect((r.body as HeartbeatResponse).diff.revoking[0]?.shards).toHaveLength(2);
        return r;
      },
      (r) => r.status !== 200,
      { timeoutMs: 6000, intervalMs: 100, message: 'a to be removed for its rebalance timeout' },
    );
    const elapsed = Date.now() - revokeAt;
    expect([removed.status, (removed.body as ProtocolErrorBody).error.code]).toEqual([
      409,
      'UNKNOWN_MEMBER_ID',
    ]);
    expect(elapsed).toBeGreaterThanOrEqual(700);
    expect(elapsed).toBeLessThan(5000);
    const d = await stateOf(api, g);
    expect(d.members.map((m) => m.memberId)).toEqual(['b']);
    expect(memberOf(d, 'b').target).toEqual([{ stream: 'orders', shards: [0, 1, 2, 3] }]);
    const bAll = await ok(api, g, { memberId: 'b', memberEpoch: 2 });
    expect(bAll.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
    const events = await allEvents(api, g);
    const removal = events.find(
      (e) => e.data.memberId === 'a' && e.data.reason === 'rebalance-timeout',
    );
    expect(removal?.type).toBeDefined();
  });

  it('static membership: -2 keeps the shards reserved, a new member id with the same instanceId takes them over at once', async () => {
    const api = fx.member();
    const g = 'g-static';
    const a = new TestMember(api, g, 'a', ['orders'], { instanceId: 'pod-0' });
    const b = new TestMember(api, g, 'b', ['orders'], { instanceId: 'pod-1' });
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    const aHad = a.shards('orders');
    const before = await describeGroup(api, g);

    const away = await heartbeat<LeaveResponse>(api, g, {
      memberId: 'a',
      memberEpoch: -2,
      instanceId: 'pod-0',
    });
    expect(away.status).toBe(200);
    expect(away.body).toEqual({ memberId: 'a', memberEpoch: -2 });
    let d = await stateOf(api, g);
    expect(d.groupEpoch).toBe(before.groupEpoch);
    expect(d.assignmentEpoch).toBe(before.assignmentEpoch);
    expect(d.state).toBe('RECONCILING');
    expect(memberOf(d, 'a')).toMatchObject({
      memberEpoch: -2,
      instanceId: 'pod-0',
      assignment: [{ stream: 'orders', shards: aHad }],
    });
    // b gets nothing of a's while a is away.
    const bBeat = await b.beat();
    expect(bBeat.assignment).toBeUndefined();
    expect(bBeat.diff).toEqual({ added: [], revoking: [], awaitingRelease: [] });
    expect(memberOf(await describeGroup(api, g), 'b').target).toEqual([
      { stream: 'orders', shards: b.shards('orders') },
    ]);
    for (const s of aHad) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('a');

    // UNRELEASED_INSTANCE_ID: pod-1 is held by live member b.
    await refused(
      api,
      g,
      joinRequest('b2', ['orders'], { instanceId: 'pod-1' }),
      409,
      'UNRELEASED_INSTANCE_ID',
    );

    // a2 takes pod-0 over: same shards, at once, no epoch bump.
    const a2 = await ok(api, g, joinRequest('a2', ['orders'], { instanceId: 'pod-0' }));
    expect(a2.memberEpoch).toBe(before.assignmentEpoch);
    expect(a2.assignment?.shards[0]?.shards).toEqual(aHad);
    d = await stateOf(api, g);
    expect(d.groupEpoch).toBe(before.groupEpoch);
    expect(d.state).toBe('STABLE');
    expect(d.members.map((m) => m.memberId)).toEqual(['a2', 'b']);
    for (const s of aHad) expect(await fenceOwner(fx.redis(), key('orders', s), g)).toBe('a2');
    expect(types(await allEvents(api, g))).toContain('MEMBER_REPLACED');
    await refused(api, g, { memberId: 'a', memberEpoch: a.epoch }, 409, 'UNKNOWN_MEMBER_ID');

    // FENCED_INSTANCE_ID: b claims pod-0; a2 rejoins under another instance id.
    await refused(
      api,
      g,
      { memberId: 'b', memberEpoch: b.epoch, instanceId: 'pod-0' },
      409,
      'FENCED_INSTANCE_ID',
    );
    await refused(
      api,
      g,
      joinRequest('a2', ['orders'], { instanceId: 'pod-9' }),
      409,
      'FENCED_INSTANCE_ID',
    );

    // -1 with the instanceId removes it for good (epoch bump, shards free).
    const gone = await heartbeat<LeaveResponse>(api, g, {
      memberId: 'a2',
      memberEpoch: -1,
      instanceId: 'pod-0',
    });
    expect(gone.body).toEqual({ memberId: 'a2', memberEpoch: -1 });
    d = await stateOf(api, g);
    expect(d.groupEpoch).toBe(before.groupEpoch + 1);
    expect(d.members.map((m) => m.memberId)).toEqual(['b']);

    // Temporary leave through the leave route.
    const t = await api.post<LeaveResponse>(`/v1/groups/${g}/leave`, {
      memberId: 'b',
      instanceId: 'pod-1',
      temporary: true,
    });
    expect(t.status).toBe(200);
    expect(t.body).toEqual({ memberId: 'b', memberEpoch: -2 });
    expect(memberOf(await stateOf(api, g), 'b').memberEpoch).toBe(-2);
  });

  it('a duplicate full heartbeat changes nothing: same epoch and assignment, empty diff.added, no events', async () => {
    const api = fx.member();
    const g = 'g-dup';
    const a = new TestMember(api, g, 'a', ['orders', 'payments']);
    await a.join();
    const full = {
      memberId: 'a',
      memberEpoch: a.epoch,
      rebalanceTimeoutMs: 30_000,
      subscribedStreams: ['orders', 'payments'],
      ownedShards: a.owned,
    };
    const first = await ok(api, g, full);
    const metaBefore = await fx.redis().hgetall(groupKeys(fx.prefix, g).meta);
    const membersBefore = await fx.redis().hgetall(groupKeys(fx.prefix, g).members);
    const eventsBefore = await allEvents(api, g);
    const describedBefore = await describeGroup(api, g);
    const second = await ok(api, g, full);
    expect(second).toEqual(first);
    expect(second.memberEpoch).toBe(1);
    expect(second.assignment?.shards.map((e) => e.shards)).toEqual([
      [0, 1, 2, 3],
      [0, 1],
    ]);
    expect(second.diff.added).toEqual([]);
    expect(await fx.redis().hgetall(groupKeys(fx.prefix, g).meta)).toEqual(metaBefore);
    expect(await fx.redis().hgetall(groupKeys(fx.prefix, g).members)).toEqual(membersBefore);
    expect(await allEvents(api, g)).toEqual(eventsBefore);
    const describedAfter = await describeGroup(api, g);
    expect({
      ...describedAfter,
      members: describedAfter.members.map((m) => ({ ...m, lastHeartbeatAt: '' })),
    }).toEqual({
      ...describedBefore,
      members: describedBefore.members.map((m) => ({ ...m, lastHeartbeatAt: '' })),
    });
  });

  it('a rejoin with epoch 0 of an existing member keeps its server-side state', async () => {
    const api = fx.member();
    const g = 'g-rejoin';
    const a = new TestMember(api, g, 'a', ['orders']);
    const b = new TestMember(api, g, 'b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    const before = await describeGroup(api, g);
    const rejoin = await ok(api, g, joinRequest('a', ['orders']));
    expect(rejoin.memberEpoch).toBe(a.epoch);
    expect(rejoin.assignment?.shards[0]?.shards).toEqual(a.shards('orders'));
    expect(shardsOf(rejoin.diff.added, 'orders')).toEqual(a.shards('orders'));
    const after = await stateOf(api, g);
    expect(after.groupEpoch).toBe(before.groupEpoch);
    expect(after.state).toBe('STABLE');
    expect(types(await allEvents(api, g))).toContain('MEMBER_REJOINED');
  });

  it('a static member away (-2) rejoining under its own member id gets its shards back at once', async () => {
    const api = fx.member();
    const g = 'g-static-same-id';
    const a = new TestMember(api, g, 'a', ['orders'], { instanceId: 'pod-a' });
    const b = new TestMember(api, g, 'b', ['orders']);
    await a.join();
    await b.join();
    await settle(api, g, [a, b]);
    const before = await describeGroup(api, g);
    await heartbeat(api, g, { memberId: 'a', memberEpoch: -2, instanceId: 'pod-a' });
    const back = await ok(api, g, joinRequest('a', ['orders'], { instanceId: 'pod-a' }));
    expect(back.assignment?.shards[0]?.shards).toEqual(a.shards('orders'));
    expect(back.memberEpoch).toBe(before.assignmentEpoch);
    const after = await stateOf(api, g);
    expect(after.groupEpoch).toBe(before.groupEpoch);
    expect(after.state).toBe('STABLE');
  });

  it('a subscription change in a regular heartbeat bumps the epoch and reassigns', async () => {
    const api = fx.member();
    const g = 'g-subscription';
    const a = new TestMember(api, g, 'a', ['orders']);
    await a.join();
    const changed = await a.beat({ subscribedStreams: ['orders', 'payments'] });
    expect(changed.memberEpoch).toBe(2);
    expect(changed.assignment?.shards.map((e) => [e.stream, e.shards])).toEqual([
      ['orders', [0, 1, 2, 3]],
      ['payments', [0, 1]],
    ]);
    expect(changed.diff.added).toEqual([{ stream: 'payments', shards: [0, 1] }]);
    const d = await stateOf(api, g);
    expect(d.groupEpoch).toBe(2);
    expect(memberOf(d, 'a').subscribedStreams).toEqual(['orders', 'payments']);
    const dropped = await a.beat({ subscribedStreams: ['payments'] });
    // orders must be revoked first: a keeps epoch 2 until it acknowledges.
    expect(dropped.memberEpoch).toBe(2);
    expect(dropped.diff.revoking).toEqual([{ stream: 'orders', shards: [0, 1, 2, 3] }]);
    const acked = await a.beat();
    expect(acked.memberEpoch).toBe(3);
    expect(a.owned).toEqual([{ stream: 'payments', shards: [0, 1] }]);
  });

  it('owned shards of unknown streams or ids are ignored (docs/protocol.md §3.2)', async () => {
    const api = fx.member();
    const g = 'g-unknown-owned';
    const a = new TestMember(api, g, 'a', ['orders']);
    await a.join();
    const res = await ok(api, g, {
      memberId: 'a',
      memberEpoch: 1,
      ownedShards: [
        { stream: 'orders', shards: [0, 1, 2, 3, 99] },
        { stream: 'not-a-stream', shards: [0] },
      ],
    });
    expect(res.memberEpoch).toBe(1);
    expect(res.diff).toEqual({ added: [], revoking: [], awaitingRelease: [] });
    expect(memberOf(await stateOf(api, g), 'a').assignment).toEqual([
      { stream: 'orders', shards: [0, 1, 2, 3] },
    ]);
  });

  it('an unsupported assignor is 400 UNSUPPORTED_ASSIGNOR; a configured one is used', async () => {
    const api = fx.member();
    const res = await refused(
      api,
      'g-assignor',
      joinRequest('a', ['orders'], { assignor: 'sticky-magic' }),
      400,
      'UNSUPPORTED_ASSIGNOR',
    );
    expect(res.error.message).toContain('sticky-magic');
    expect((await api.get('/v1/groups/g-assignor')).status).toBe(404);
    await ok(api, 'g-assignor', joinRequest('a', ['orders'], { assignor: 'range' }));
    expect((await describeGroup(api, 'g-assignor')).assignor).toBe('range');
  });

  it('subscribing to a stream that does not exist yet: creating it bumps the epoch and assigns its shards', async () => {
    const api = fx.member();
    const g = 'g-later';
    const sub = createTestRedis();
    const nudges: string[] = [];
    try {
      await sub.subscribe(`${fx.prefix}:nudge:${g}`);
      sub.on('message', (_channel: string, message: string) => nudges.push(...message.split('\n')));
      const join = await ok(api, g, joinRequest('a', ['later-stream']));
      expect(join.memberEpoch).toBe(1);
      expect(join.assignment).toEqual({ shards: [] });
      const created = await fx
        .admin()
        .put<StreamRouting>('/v1/streams/later-stream', { shards: 3 });
      expect(created.status).toBe(201);
      // Without any heartbeat from a: the group's epoch bumps and its target holds the new shards.
      const d = await pollUntil(
        () => describeGroup(api, g),
        (x) => x.groupEpoch === 2 && x.assignmentEpoch === 2,
        {
          timeoutMs: 10_000,
          intervalMs: 25,
          message: 'the group epoch to bump after the stream was created',
        },
      );
      expect(memberOf(d, 'a').target).toEqual([{ stream: 'later-stream', shards: [0, 1, 2] }]);
      // a is nudged to heartbeat now.
      await pollUntil(
        async () => nudges,
        (n) => n.includes('a'),
        { timeoutMs: 3000, intervalMs: 25, message: 'a nudge for member a' },
      );
      const next = await ok(api, g, { memberId: 'a', memberEpoch: 1 });
      expect(next.memberEpoch).toBe(2);
      expect(next.assignment?.shards).toEqual([
        {
          stream: 'later-stream',
          shards: [0, 1, 2],
          keys: [0, 1, 2].map((s) => key('later-stream', s)),
        },
      ]);
      expect((await stateOf(api, g)).state).toBe('STABLE');
      for (const s of [0, 1, 2])
        expect(await fenceOwner(fx.redis(), key('later-stream', s), g)).toBe('a');
    } finally {
      sub.disconnect();
    }
  });

  it('admin removes a member (204, then UNKNOWN_MEMBER_ID); a missing member is 404', async () => {
    const api = fx.member();
    const g = 'g-admin-remove';
    const odd = 'pod/1:x@y';
    const m = new TestMember(api, g, odd, ['orders']);
    await m.join();
    await ok(api, g, joinRequest('other', ['orders']));
    const epochBefore = (await describeGroup(api, g)).groupEpoch;
    const del = await fx.admin().delete(`/v1/groups/${g}/members/${encodeURIComponent(odd)}`);
    expect(del.status).toBe(204);
    expect(del.body).toBe('');
    const d = await stateOf(api, g);
    expect(d.members.map((x) => x.memberId)).toEqual(['other']);
    expect(d.groupEpoch).toBe(epochBefore + 1);
    await refused(api, g, { memberId: odd, memberEpoch: m.epoch }, 409, 'UNKNOWN_MEMBER_ID');
    const again = await fx
      .admin()
      .delete<ProtocolErrorBody>(`/v1/groups/${g}/members/${encodeURIComponent(odd)}`);
    expect([again.status, again.body.error.code]).toEqual([404, 'UNKNOWN_MEMBER_ID']);
    const noGroup = await fx.admin().delete<ProtocolErrorBody>('/v1/groups/g-no-such/members/x');
    expect([noGroup.status, noGroup.body.error.code]).toEqual([404, 'GROUP_ID_NOT_FOUND']);
    expect(
      (await allEvents(api, g)).some((e) => e.type === 'MEMBER_REMOVED' && e.data.memberId === odd),
    ).toBe(true);
  });

  it('DELETE group: 409 GROUP_NOT_EMPTY with members, 204 when EMPTY, then 404', async () => {
    const api = fx.member();
    const admin = fx.admin();
    const g = 'g-delete';
    await ok(api, g, joinRequest('a', ['orders']));
    const busy = await admin.delete<ProtocolErrorBody>(`/v1/groups/${g}`);
    expect([busy.status, busy.body.error.code]).toEqual([409, 'GROUP_NOT_EMPTY']);
    await heartbeat(api, g, { memberId: 'a', memberEpoch: -1 });
    const empty = await stateOf(api, g);
    expect(empty.state).toBe('EMPTY');
    const listed = await api.get<{ groups: GroupListing[] }>('/v1/groups');
    expect(listed.body.groups.find((x) => x.groupId === g)).toEqual({
      groupId: g,
      state: 'EMPTY',
      groupEpoch: 2,
      members: 0,
    });
    const del = await admin.delete(`/v1/groups/${g}`);
    expect(del.status).toBe(204);
    expect(del.body).toBe('');
    const gone = await api.get<ProtocolErrorBody>(`/v1/groups/${g}`);
    expect([gone.status, gone.body.error.code]).toEqual([404, 'GROUP_ID_NOT_FOUND']);
    expect(
      (await api.get<{ groups: GroupListing[] }>('/v1/groups')).body.groups.map((x) => x.groupId),
    ).not.toContain(g);
    const again = await admin.delete<ProtocolErrorBody>(`/v1/groups/${g}`);
    expect([again.status, again.body.error.code]).toEqual([404, 'GROUP_ID_NOT_FOUND']);
    const { meta, members, targets, seen } = groupKeys(fx.prefix, g);
    for (const part of [members, targets, seen]) {
      expect(await fx.redis().exists(part)).toBe(0);
    }
    // The meta hash keeps only the deleted incarnation, which a re-creation is stamped above.
    expect(Object.keys(await fx.redis().hgetall(meta))).toEqual(['incarnationFloor']);
    // A new join starts the group afresh.
    expect((await ok(api, g, joinRequest('a', ['orders']))).memberEpoch).toBe(1);
  });

  it('member-ids route: 201 with a valid, fresh id; the group need not exist', async () => {
    const api = fx.member();
    const one = await api.post<{ memberId: string }>('/v1/groups/g-ids/member-ids', {});
    const two = await api.request<{ memberId: string }>('POST', '/v1/groups/g-ids/member-ids');
    expect(one.status).toBe(201);
    expect(two.status).toBe(201);
    expect(Object.keys(one.body)).toEqual(['memberId']);
    expect(one.body.memberId).toMatch(ID_PATTERN);
    expect(two.body.memberId).toMatch(ID_PATTERN);
    expect(one.body.memberId).not.toBe(two.body.memberId);
    expect((await api.get('/v1/groups/g-ids')).status).toBe(404);
    // The issued id joins like any other.
    expect((await ok(api, 'g-ids', joinRequest(one.body.memberId, ['orders']))).memberId).toBe(
      one.body.memberId,
    );
  });

  it('events route: shape, oldest first, `after` exclusive, limit default 100 and max 1000', async () => {
    const api = fx.member();
    const g = 'g-events';
    await ok(api, g, joinRequest('anchor', ['orders']));
    for (let i = 0; i < 25; i++) {
      await ok(api, g, joinRequest(`m${i}`, ['orders']));
      await heartbeat(api, g, { memberId: `m${i}`, memberEpoch: -1 });
    }
    const all = await allEvents(api, g);
    expect(all.length).toBeGreaterThan(100);
    for (const e of all) {
      expect(Object.keys(e).sort()).toEqual(['at', 'data', 'groupEpoch', 'id', 'type']);
      expect(e.id).toMatch(/^\d+-\d+$/);
      expect(e.at).toMatch(ISO_8601);
      expect(Number.isInteger(e.groupEpoch)).toBe(true);
      expect(typeof e.data).toBe('object');
    }
    const ids = all.map((e) => e.id.split('-').map(Number) as [number, number]);
    for (let i = 1; i < ids.length; i++) {
      const [ms, seq] = ids[i] as [number, number];
      const [pms, pseq] = ids[i - 1] as [number, number];
      expect(ms > pms || (ms === pms && seq > pseq)).toBe(true);
    }
    expect(all.map((e) => e.groupEpoch)).toEqual(
      all.map((e) => e.groupEpoch).sort((x, y) => x - y),
    );
    expect(types(all)).toEqual(
      expect.arrayContaining([
        'MEMBER_JOINED',
        'MEMBER_LEFT',
        'GROUP_EPOCH_BUMPED',
        'TARGET_ASSIGNMENT_CHANGED',
        'SHARDS_ASSIGNED',
      ]),
    );

    const page = await api.get<{ events: GroupEventEntry[] }>(`/v1/groups/${g}/events`);
    expect(page.status).toBe(200);
    expect(Object.keys(page.body)).toEqual(['events']);
    expect(page.body.events).toEqual(all.slice(0, 100));
    const after = await api.get<{ events: GroupEventEntry[] }>(
      `/v1/groups/${g}/events?after=${all[1]?.id}&limit=3`,
    );
    expect(after.body.events).toEqual(all.slice(2, 5));
    const max = await api.get<{ events: GroupEventEntry[] }>(`/v1/groups/${g}/events?limit=1000`);
    expect(max.body.events).toEqual(all.slice(0, 1000));
    const tail = await api.get<{ events: GroupEventEntry[] }>(
      `/v1/groups/${g}/events?after=${all.at(-1)?.id}`,
    );
    expect(tail.body.events).toEqual([]);
    const missing = await api.get<ProtocolErrorBody>('/v1/groups/g-events-missing/events');
    expect([missing.status, missing.body.error.code]).toEqual([404, 'GROUP_ID_NOT_FOUND']);
  });

  it('GET /v1/groups lists every group with exactly {groupId, state, groupEpoch, members}', async () => {
    const api = fx.member();
    await ok(api, 'g-list', joinRequest('a', ['orders']));
    const res = await api.get<{ groups: GroupListing[] }>('/v1/groups');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['groups']);
    for (const entry of res.body.groups) {
      expect(Object.keys(entry).sort()).toEqual(['groupEpoch', 'groupId', 'members', 'state']);
      expect(['EMPTY', 'ASSIGNING', 'RECONCILING', 'STABLE']).toContain(entry.state);
      expect(Number.isInteger(entry.members)).toBe(true);
    }
    expect(res.body.groups.find((x) => x.groupId === 'g-list')).toEqual({
      groupId: 'g-list',
      state: 'STABLE',
      groupEpoch: 1,
      members: 1,
    });
    const described = await describeGroup(api, 'g-first');
    expect(res.body.groups.find((x) => x.groupId === 'g-first')).toEqual({
      groupId: 'g-first',
      state: described.state,
      groupEpoch: described.groupEpoch,
      members: described.members.length,
    });
  });

  it('describe shows rackId and instanceId when set', async () => {
    const api = fx.member();
    await ok(
      api,
      'g-rack',
      joinRequest('a', ['orders'], { instanceId: 'pod-7', rackId: 'zone-b' }),
    );
    expect(memberOf(await describeGroup(api, 'g-rack'), 'a')).toMatchObject({
      instanceId: 'pod-7',
      rackId: 'zone-b',
      clientHost: '127.0.0.1',
    });
  });

  it('streams: PUT 201 then 200 for the same N, 409 STREAM_EXISTS for another N; GET routing per docs/protocol.md §8.3', async () => {
    const admin = fx.admin();
    const created = await admin.put<StreamRouting>('/v1/streams/clicks', { shards: 5 });
    expect(created.status).toBe(201);
    const repeat = await admin.put<StreamRouting>('/v1/streams/clicks', { shards: 5 });
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(created.body);
    const other = await admin.put<ProtocolErrorBody>('/v1/streams/clicks', { shards: 6 });
    expect([other.status, other.body.error.code]).toEqual([409, 'STREAM_EXISTS']);
    expect(other.body.error.message).toContain('reshard');

    const got = await fx.member().get<StreamRouting>('/v1/streams/clicks');
    expect(got.status).toBe(200);
    expect(got.body).toEqual(created.body);
    const body = got.body;
    expect(Object.keys(body).sort()).toEqual([
      'deadLetterKey',
      'resharding',
      'routing',
      'routingEpoch',
      'shards',
      'stream',
    ]);
    expect(body.stream).toBe('clicks');
    expect(Number.isInteger(body.routingEpoch)).toBe(true);
    expect(body.shards).toEqual([0, 1, 2, 3, 4].map((id) => ({ id, key: key('clicks', id) })));
    expect(body.deadLetterKey).toBe(`${fx.prefix}:{clicks}:dlq`);
    expect(body.resharding).toBeNull();
    expect(body.routing.function).toBe('murmur3-slots');
    expect(body.routing.hash).toBe('murmur3_x86_32');
    // The ranges cover the slot space contiguously and name only listed shards.
    let next = 0;
    for (const r of body.routing.ranges) {
      expect(r.from).toBe(next);
      expect(r.to).toBeGreaterThan(r.from);
      next = r.to;
    }
    expect(next).toBe(body.routing.slots);
    // A producer reproduces key → shard from the body alone; every shard gets keys.
    const table = new RoutingTable(body.routing);
    const hit = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const k = `customer-${i}`;
      const slot = murmur3x86_32(k, body.routing.seed) % body.routing.slots;
      const expected = body.routing.ranges.find((r) => slot >= r.from && slot < r.to)?.shard;
      expect(table.shardFor(k)).toBe(expected);
      hit.add(table.shardFor(k));
    }
    expect([...hit].sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4]);
    // The data plane is open for writes on every shard.
    for (const s of body.shards)
      expect(await fx.redis().hget(`${s.key}:meta`, 'state')).toBe('open');

    const list = await fx.member().get<{ streams: StreamRouting[] }>('/v1/streams');
    expect(list.body.streams.map((s) => s.stream)).toEqual([
      'clicks',
      'later-stream',
      'orders',
      'payments',
    ]);
    const missing = await fx.member().get<ProtocolErrorBody>('/v1/streams/nope');
    expect([missing.status, missing.body.error.code]).toEqual([404, 'STREAM_NOT_FOUND']);
  });
});

describe('Kafka KIP-848 scenarios over HTTP (short session timeout, GROUP_MAX_SIZE=2)', () => {
  const fx = useCoordinator('kafka-scn-timers', {
    STREAMS: 'orders:4',
    SESSION_TIMEOUT_MS: '1500',
    HEARTBEAT_INTERVAL_MS: '300',
    GROUP_MAX_SIZE: '2',
  });

  it('session expiry removes a silent member after SESSION_TIMEOUT_MS; a live one stays', async () => {
    const api = fx.member();
    const g = 'g-expiry';
    const a = new TestMember(api, g, 'a', ['orders']);
    const b = new TestMember(api, g, 'b', ['orders']);
    expect((await a.join()).sessionTimeoutMs).toBe(1500);
    expect((await b.join()).heartbeatIntervalMs).toBe(300);
    await settle(api, g, [a, b]);
    const silentSince = Date.now();
    await a.beat();
    // b keeps heartbeating (and acks what it is told); a goes silent.
    const d = await pollUntil(
      async () => {
        await b.beat();
        return describeGroup(api, g);
      },
      (x) => x.members.length === 1,
      { timeoutMs: 8000, intervalMs: 200, message: 'a to expire' },
    );
    const elapsed = Date.now() - silentSince;
    expect(elapsed).toBeGreaterThanOrEqual(1400);
    expect(d.members.map((m) => m.memberId)).toEqual(['b']);
    await refused(api, g, { memberId: 'a', memberEpoch: a.epoch }, 409, 'UNKNOWN_MEMBER_ID');
    const events = await allEvents(api, g);
    expect(events.filter((e) => e.type === 'MEMBER_EXPIRED').map((e) => e.data.memberId)).toEqual([
      'a',
    ]);
    await b.beat();
    expect(b.shards('orders')).toEqual([0, 1, 2, 3]);
  });

  it('a static member away (-2) keeps its shards until the session timeout, then is removed', async () => {
    const api = fx.member();
    const g = 'g-static-expiry';
    const a = new TestMember(api, g, 'a', ['orders'], { instanceId: 'pod-0' });
    await a.join();
    const epoch = (await describeGroup(api, g)).groupEpoch;
    await heartbeat(api, g, { memberId: 'a', memberEpoch: -2, instanceId: 'pod-0' });
    const away = Date.now();
    expect(memberOf(await describeGroup(api, g), 'a').memberEpoch).toBe(-2);
    const d = await pollUntil(
      () => describeGroup(api, g),
      (x) => x.members.length === 0,
      { timeoutMs: 8000, intervalMs: 100, message: 'the away static member to expire' },
    );
    expect(Date.now() - away).toBeGreaterThanOrEqual(1400);
    expect(d.groupEpoch).toBe(epoch + 1);
    // The instance id is free again: a new member joins with it, as a new member.
    const again = await ok(api, g, joinRequest('a-new', ['orders'], { instanceId: 'pod-0' }));
    expect(again.assignment?.shards[0]?.shards).toEqual([0, 1, 2, 3]);
  });

  it('GROUP_MAX_SIZE_REACHED for a third member; members already in can still rejoin', async () => {
    const api = fx.member();
    const g = 'g-max';
    await ok(api, g, joinRequest('a', ['orders']));
    await ok(api, g, joinRequest('b', ['orders']));
    const before = await snapshotKeys(fx.redis(), groupKeys(fx.prefix, g).stem);
    const full = await refused(api, g, joinRequest('c', ['orders']), 409, 'GROUP_MAX_SIZE_REACHED');
    expect(full.error.message).toContain('GROUP_MAX_SIZE');
    const after = await snapshotKeys(fx.redis(), groupKeys(fx.prefix, g).stem);
    expect(after).toEqual(before);
    expect((await describeGroup(api, g)).members).toHaveLength(2);
    expect((await heartbeat(api, g, joinRequest('a', ['orders']))).status).toBe(200);
  });
});
