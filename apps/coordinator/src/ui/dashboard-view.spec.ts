import type { DescribedGroup, GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { describe, expect, it } from 'vitest';
import { shardGrid, summarize } from './dashboard-view.js';

const member = (
  memberId: string,
  fields: Partial<DescribedGroup['members'][number]>,
): DescribedGroup['members'][number] => ({
  memberId,
  instanceId: null,
  rackId: null,
  memberEpoch: 2,
  state: 'STABLE',
  subscribedStreams: ['orders'],
  assignment: [],
  pendingRevocation: [],
  target: [],
  lastHeartbeatAt: '2026-01-01T00:00:00.000Z',
  clientHost: null,
  ...fields,
});

describe('shardGrid', () => {
  it('marks owned, revoking, awaiting and pending cells, and draining shards', () => {
    const group: DescribedGroup = {
      groupId: 'g',
      state: 'RECONCILING',
      groupEpoch: 2,
      assignmentEpoch: 2,
      assignor: 'uniform',
      members: [
        member('a', {
          assignment: [{ stream: 'orders', shards: [0] }],
          pendingRevocation: [{ stream: 'orders', shards: [1] }],
          target: [{ stream: 'orders', shards: [0] }],
        }),
        member('b', { target: [{ stream: 'orders', shards: [1, 2] }] }),
      ],
    };
    const rows = shardGrid(group, new Map([['orders', [0, 1, 2, 3]]]), new Set(['orders/3']));
    expect(rows.map((r) => [`${r.stream}/${r.shard}`, r.owner, r.cells, r.draining])).toEqual([
      ['orders/0', 'a', { a: 'owned' }, false],
      ['orders/1', 'a', { a: 'revoking', b: 'awaiting' }, false],
      ['orders/2', null, { b: 'pending' }, false],
      ['orders/3', null, {}, true],
    ]);
  });
});

describe('summarize', () => {
  const e = (type: string, data: Record<string, unknown>): GroupEventEntry => ({
    id: '1-0',
    type,
    at: '2026-01-01T00:00:00.000Z',
    groupEpoch: 3,
    data,
  });

  it('says which shards moved, from whom, to whom and why', () => {
    expect(
      summarize(
        e('TARGET_ASSIGNMENT_CHANGED', {
          assignmentEpoch: 3,
          reason: 'expiry',
          assignor: 'uniform',
          moved: 2,
          moves: [
            { stream: 'orders', shard: 1, from: 'x', to: 'a' },
            { stream: 'orders', shard: 5, from: 'x', to: null },
          ],
        }),
      ),
    ).toBe('target epoch 3 (expiry, uniform): 2 shard(s) moved — orders/1 x→a, orders/5 x→∅');
    expect(
      summarize(
        e('MEMBER_EXPIRED', { memberId: 'x', released: [{ stream: 'orders', shards: [1, 5] }] }),
      ),
    ).toBe('x expired, released orders:1,5');
    expect(
      summarize(
        e('SHARDS_REVOKED', { memberId: 'a', shards: [{ stream: 'orders', shards: [2] }] }),
      ),
    ).toBe('a must revoke orders:2');
  });

  it('says when a target was computed with the default assignor instead of the group choice', () => {
    expect(
      summarize(
        e('ASSIGNOR_FALLBACK', {
          assignmentEpoch: 4,
          requested: 'active-standby',
          used: 'uniform',
          membersNaming: 2,
          members: ['a', 'b'],
        }),
      ),
    ).toBe(
      'assignor active-standby is not configured on this replica: target epoch 4 used uniform',
    );
  });
});
