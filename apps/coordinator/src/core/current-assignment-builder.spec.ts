import { describe, expect, it } from 'vitest';
import type { MemberStateName } from '@redis-stream-coordinator/nestjs/protocol';
import { type Assignment, assignmentOf, EMPTY_ASSIGNMENT } from './assignment.js';
import { CoordinatorError } from './coordinator-error.js';
import { type ReconcileContext, reconcileMember } from './current-assignment-builder.js';
import { type MemberRecord, newMember } from './member.js';

/**
 * Kafka's `CurrentAssignmentBuilderTest` (its scenarios 1–13), adapted: topics are
 * streams (`orders` = topic1, `payments` = topic2), "partition epoch ≠ -1" is "owned by a member",
 * and the expected records are complete `MemberRecord`s.
 *
 * One deliberate difference from Kafka: Kafka's builder sets `previousMemberEpoch` to the old
 * epoch on every record it writes, even when the epoch stays; ours moves it only when the epoch
 * changes (docs/protocol.md §4.1: every epoch change records the old value). Scenario 9 shows it.
 */

const NOW = 5_000;

/** `orders` shards, `payments` shards. */
function a(orders: number[], payments: number[]): Assignment {
  return assignmentOf({ orders, payments });
}

function member(fields: Partial<MemberRecord>): MemberRecord {
  return newMember({
    memberId: 'member',
    joinedAt: 1,
    subscribedStreams: ['orders', 'payments'],
    rebalanceTimeoutMs: 30_000,
    ...fields,
  });
}

/** Every shard is free (Kafka: `currentPartitionEpoch → -1`). */
const allFree: ReconcileContext = { now: NOW, ownerOf: () => undefined };

/** Shards of `mine` belong to the member, every other shard to someone else (epoch 10 everywhere). */
function ownedElsewhereExcept(mine: Assignment): ReconcileContext {
  return {
    now: NOW,
    ownerOf: (stream, shard) => (mine.get(stream)?.includes(shard) ? 'member' : 'other'),
  };
}

/** The member holds `mine`; nothing else is owned. */
function onlyMine(mine: Assignment): ReconcileContext {
  return {
    now: NOW,
    ownerOf: (stream, shard) => (mine.get(stream)?.includes(shard) ? 'member' : undefined),
  };
}

describe('reconcileMember (Kafka CurrentAssignmentBuilder scenarios)', () => {
  it('1. STABLE → STABLE: same set at a newer target epoch moves the epoch only', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([1, 2, 3], [4, 5, 6]),
    });
    const next = reconcileMember(
      m,
      11,
      a([1, 2, 3], [4, 5, 6]),
      undefined,
      ownedElsewhereExcept(m.assigned),
    );
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([1, 2, 3], [4, 5, 6]),
      }),
    );
  });

  it('2. STABLE → STABLE with new shards: free shards are granted at once', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([1, 2, 3], [4, 5, 6]),
    });
    const next = reconcileMember(m, 11, a([1, 2, 3, 4], [4, 5, 6, 7]), undefined, allFree);
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([1, 2, 3, 4], [4, 5, 6, 7]),
      }),
    );
  });

  it('3. STABLE → UNREVOKED: keeps the old epoch, assigned = intersection, added shards held back', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([1, 2, 3], [4, 5, 6]),
    });
    const next = reconcileMember(m, 11, a([2, 3, 4], [5, 6, 7]), undefined, allFree);
    expect(next).toEqual(
      member({
        state: 'UNREVOKED_SHARDS',
        memberEpoch: 10,
        previousMemberEpoch: 10,
        assigned: a([2, 3], [5, 6]),
        pendingRevocation: a([1], [4]),
        revokeStartedAt: NOW,
      }),
    );
  });

  it('4. STABLE → UNRELEASED: added shards still held elsewhere; new epoch, old set', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([1, 2, 3], [4, 5, 6]),
    });
    const next = reconcileMember(
      m,
      11,
      a([1, 2, 3, 4], [4, 5, 6, 7]),
      undefined,
      ownedElsewhereExcept(m.assigned),
    );
    expect(next).toEqual(
      member({
        state: 'UNRELEASED_SHARDS',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([1, 2, 3], [4, 5, 6]),
      }),
    );
  });

  it('5. STABLE → UNRELEASED skipping UNREVOKED: the owned list already lacks the dropped shard', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([1, 2, 3], [4, 5, 6]),
    });
    // payments/7 is held by another member; payments/6 (dropped) is no longer reported owned.
    const ctx: ReconcileContext = {
      now: NOW,
      ownerOf: (stream, shard) =>
        stream === 'payments'
          ? m.assigned.get('payments')?.includes(shard)
            ? 'member'
            : 'other'
          : undefined,
    };
    const next = reconcileMember(m, 11, a([1, 2, 3], [4, 5, 7]), EMPTY_ASSIGNMENT, ctx);
    expect(next).toEqual(
      member({
        state: 'UNRELEASED_SHARDS',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([1, 2, 3], [4, 5]),
      }),
    );
  });

  const unrevoked = member({
    state: 'UNREVOKED_SHARDS',
    memberEpoch: 10,
    previousMemberEpoch: 10,
    assigned: a([2, 3], [5, 6]),
    pendingRevocation: a([1], [4]),
    revokeStartedAt: 4_000,
  });

  it('6. UNREVOKED → STABLE: the acknowledgement (owned == assigned) moves to the target epoch', () => {
    const next = reconcileMember(unrevoked, 11, a([2, 3], [5, 6]), a([2, 3], [5, 6]), allFree);
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([2, 3], [5, 6]),
      }),
    );
  });

  it('6b. UNREVOKED → STABLE when a pending shard is back in the target (KAFKA-19449)', () => {
    const m = member({
      state: 'UNREVOKED_SHARDS',
      memberEpoch: 10,
      previousMemberEpoch: 10,
      assigned: a([2, 3], [5, 6]),
      pendingRevocation: assignmentOf({ orders: [4] }),
      revokeStartedAt: 4_000,
    });
    // orders/4 is owned by this member itself (pending): not "held by another".
    const next = reconcileMember(
      m,
      12,
      a([2, 3, 4], [5, 6, 7]),
      a([2, 3], [5, 6]),
      onlyMine(a([2, 3, 4], [5, 6])),
    );
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 12,
        previousMemberEpoch: 10,
        assigned: a([2, 3, 4], [5, 6, 7]),
      }),
    );
  });

  it('7. remains UNREVOKED (the very same record) while owned is absent or still holds a pending shard', () => {
    const target = a([3], [6]);
    expect(reconcileMember(unrevoked, 12, target, undefined, allFree)).toBe(unrevoked);
    expect(reconcileMember(unrevoked, 12, target, a([1, 2, 3], [5, 6]), allFree)).toBe(unrevoked);
    expect(reconcileMember(unrevoked, 12, target, a([2, 3], [4, 5, 6]), allFree)).toBe(unrevoked);
  });

  it('8. UNREVOKED → UNREVOKED: a newer target needs more revocations; the epoch stays (KAFKA-19974)', () => {
    const next = reconcileMember(unrevoked, 12, a([3], [6]), a([2, 3], [5, 6]), allFree);
    expect(next).toEqual(
      member({
        state: 'UNREVOKED_SHARDS',
        memberEpoch: 10,
        previousMemberEpoch: 10,
        assigned: a([3], [6]),
        pendingRevocation: a([2], [5]),
        // A new pending set restarts the rebalance timer.
        revokeStartedAt: NOW,
      }),
    );
  });

  it('8b. the rebalance timer is not restarted while the same shards stay pending', () => {
    const m = member({ ...unrevoked, memberEpoch: 10 });
    // A newer target that asks for exactly the pending shards again (owned acknowledges nothing).
    const still = reconcileMember(m, 12, a([2, 3], [5, 6]), a([1, 2, 3], [4, 5, 6]), allFree);
    expect(still).toBe(m);
    expect(still.revokeStartedAt).toBe(4_000);
  });

  it('9. UNREVOKED → UNRELEASED: acknowledged, but the new shards are still held elsewhere', () => {
    const m = member({
      state: 'UNREVOKED_SHARDS',
      memberEpoch: 11,
      previousMemberEpoch: 10,
      assigned: a([2, 3], [5, 6]),
      revokeStartedAt: 4_000,
    });
    const next = reconcileMember(
      m,
      11,
      a([2, 3, 4], [5, 6, 7]),
      a([2, 3], [5, 6]),
      ownedElsewhereExcept(m.assigned),
    );
    expect(next).toEqual(
      // Kafka expects previousMemberEpoch 11 here (it rewrites it on every record); the epoch did
      // not change, so ours keeps 10.
      member({
        state: 'UNRELEASED_SHARDS',
        memberEpoch: 11,
        previousMemberEpoch: 10,
        assigned: a([2, 3], [5, 6]),
      }),
    );
  });

  const unreleased = member({
    state: 'UNRELEASED_SHARDS',
    memberEpoch: 11,
    previousMemberEpoch: 11,
    assigned: a([2, 3], [5, 6]),
  });

  it('10. UNRELEASED → STABLE with new shards: released shards are granted, epoch unchanged', () => {
    const next = reconcileMember(unreleased, 11, a([2, 3, 4], [5, 6, 7]), undefined, allFree);
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 11,
        previousMemberEpoch: 11,
        assigned: a([2, 3, 4], [5, 6, 7]),
      }),
    );
  });

  it('10b. UNRELEASED → STABLE at a newer target with the same set', () => {
    const next = reconcileMember(
      unreleased,
      12,
      a([2, 3], [5, 6]),
      undefined,
      ownedElsewhereExcept(unreleased.assigned),
    );
    expect(next).toEqual(
      member({
        state: 'STABLE',
        memberEpoch: 12,
        previousMemberEpoch: 11,
        assigned: a([2, 3], [5, 6]),
      }),
    );
  });

  it('11. UNRELEASED → UNRELEASED: still held elsewhere gives the identical record (nothing to write)', () => {
    const next = reconcileMember(
      unreleased,
      11,
      a([2, 3, 4], [5, 6, 7]),
      undefined,
      ownedElsewhereExcept(unreleased.assigned),
    );
    expect(next).toBe(unreleased);
  });

  it('12. UNRELEASED → UNREVOKED: a newer target removes shards', () => {
    const next = reconcileMember(
      unreleased,
      12,
      a([3], [6]),
      undefined,
      ownedElsewhereExcept(unreleased.assigned),
    );
    expect(next).toEqual(
      member({
        state: 'UNREVOKED_SHARDS',
        memberEpoch: 11,
        previousMemberEpoch: 11,
        assigned: a([3], [6]),
        pendingRevocation: a([2], [5]),
        revokeStartedAt: NOW,
      }),
    );
  });

  it('13. unknown stored state: FENCED_MEMBER_EPOCH unless owned is empty, then reconciled from scratch', () => {
    const m = member({
      state: 'FUTURE_STATE' as MemberStateName,
      memberEpoch: 11,
      previousMemberEpoch: 11,
      assigned: a([3], [6]),
      pendingRevocation: a([2], [5]),
      revokeStartedAt: 4_000,
    });
    const ctx = ownedElsewhereExcept(a([2, 3], [5, 6]));
    for (const owned of [undefined, a([3], [6])]) {
      let error: unknown;
      try {
        reconcileMember(m, 12, a([3], [6]), owned, ctx);
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CoordinatorError);
      expect((error as CoordinatorError).code).toBe('FENCED_MEMBER_EPOCH');
    }
    const next = reconcileMember(m, 12, a([3], [6]), EMPTY_ASSIGNMENT, ctx);
    expect(next).toEqual(
      member({ state: 'STABLE', memberEpoch: 12, previousMemberEpoch: 11, assigned: a([3], [6]) }),
    );
  });

  it('a member already reconciled to the target epoch is returned as is', () => {
    const m = member({
      state: 'STABLE',
      memberEpoch: 11,
      previousMemberEpoch: 10,
      assigned: a([1], [2]),
    });
    expect(reconcileMember(m, 11, a([1, 2], [2]), undefined, allFree)).toBe(m);
  });
});
