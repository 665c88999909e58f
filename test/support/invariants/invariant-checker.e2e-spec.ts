import { describe, expect, it } from 'vitest';
import { checkInvariants } from './invariant-checker.js';
import { formatInvariantReport } from './invariant-summary.js';
import type {
  AckRecord,
  HandledRecord,
  InvariantInput,
  OwnershipInterval,
  ProducedMessage,
} from './invariant-input.types.js';
import type { InvariantResult } from './invariant-report.types.js';
import { ownershipFromEvents } from './ownership-timeline.js';

// Pure checks of the checker on hand-made runs: each invariant must be able to fail.

const T = 1_700_000_000_000;
const produced: ProducedMessage[] = [
  { key: 'a', seq: 0, shard: 0, id: '1-0' },
  { key: 'a', seq: 1, shard: 0, id: '2-0' },
  { key: 'a', seq: 2, shard: 0, id: '3-0' },
  { key: 'b', seq: 0, shard: 1, id: '1-0' },
];

function h(m: string, p: ProducedMessage, t0: number, t1: number, d = 1): HandledRecord {
  return { m, st: 'orders', s: p.shard, k: p.key, id: p.id, q: p.seq, d, t0: T + t0, t1: T + t1 };
}
function ack(m: string, s: number, ids: string[], t: number): AckRecord {
  return { a: ids, m, s, t: T + t };
}
function own(memberId: string, shard: number, from: number, to: number | null): OwnershipInterval {
  return {
    memberId,
    stream: 'orders',
    shard,
    from: T + from,
    to: to === null ? null : T + to,
    endedBy: to === null ? null : 'SHARDS_RELEASED',
  };
}
const [a0, a1, a2, b0] = produced as [
  ProducedMessage,
  ProducedMessage,
  ProducedMessage,
  ProducedMessage,
];

/** A clean run: A owns shard 0 until 100, B from 110; C owns shard 1. */
function clean(): InvariantInput {
  return {
    stream: 'orders',
    produced,
    handled: [h('A', a0, 10, 11), h('A', a1, 12, 13), h('B', a2, 120, 121), h('C', b0, 10, 12)],
    acks: [ack('A', 0, ['1-0', '2-0'], 14), ack('B', 0, ['3-0'], 122), ack('C', 1, ['1-0'], 13)],
    ownership: [own('A', 0, 0, 100), own('B', 0, 110, null), own('C', 1, 0, null)],
    pending: {
      byShard: new Map([
        [0, []],
        [1, []],
      ]),
    },
  };
}

describe('invariant checker', () => {
  it('passes a clean run and prints a table', () => {
    const report = checkInvariants(clean());
    expect(report.ok).toBe(true);
    expect(report.counts).toMatchObject({
      produced: 4,
      distinctHandled: 4,
      duplicates: 0,
      handOffs: 1,
    });
    expect(report.counts.minHandOffGapMs).toBeCloseTo(107, 5);
    const text = formatInvariantReport(report, 'clean');
    expect(text).toContain('ALL HOLD');
    expect(text).toContain('single owner per shard');
  });

  it('no loss: an unhandled, an unacked and a still pending message', () => {
    const input = clean();
    const report = checkInvariants({
      ...input,
      handled: input.handled.filter((x) => x.k !== 'b'),
      acks: (input.acks ?? []).filter((x) => x.m !== 'B'),
      pending: { byShard: new Map([[0, [{ id: '3-0', consumer: 'B' }]]]) },
    });
    expect(report.results.noLoss.byKind).toEqual({ unhandled: 1, unacked: 1, 'pending-at-end': 1 });
    expect(report.ok).toBe(false);
  });

  it('no loss without ack records falls back to the final pending entries', () => {
    const input = {
      ...clean(),
      acks: null,
      pending: { byShard: new Map([[0, [{ id: '3-0', consumer: 'B' }]]]) },
    };
    const report = checkInvariants(input);
    expect(report.ackSource).toBe('pending-snapshot');
    expect(report.results.noLoss.byKind).toEqual({ 'pending-at-end': 1 });
  });

  it('no loss: an ack applied just before its member was killed (no record, not pending) is explained, only then', () => {
    // B handled 3-0 at [120, 121] and was SIGKILLed at 400: its ack reached Redis (nothing is
    // pending at the end) but the record never got written
    const input = { ...clean(), acks: (clean().acks ?? []).filter((x) => x.m !== 'B') };
    const crashed = checkInvariants({ ...input, crashes: [{ memberId: 'B', at: T + 400 }] });
    expect(crashed.results.noLoss.byKind).toEqual({});
    expect(crashed.results.noLoss.notes).toEqual({ ackRecordLostInCrash: 1 });
    expect(crashed.ok).toBe(true);
    // no crash, a crash long after, a crash of another member, a crash before the handling ended:
    // the missing ack record is a violation
    for (const crashes of [
      [],
      [{ memberId: 'B', at: T + 121 + 3001 }],
      [{ memberId: 'A', at: T + 400 }],
      [{ memberId: 'B', at: T + 120.5 }],
    ]) {
      const report = checkInvariants({ ...input, crashes });
      expect(report.results.noLoss.byKind, JSON.stringify(crashes)).toEqual({ unacked: 1 });
    }
    // still pending at the end: never explained by a crash
    const pending = checkInvariants({
      ...input,
      crashes: [{ memberId: 'B', at: T + 400 }],
      pending: { byShard: new Map([[0, [{ id: '3-0', consumer: 'B' }]]]) },
    });
    expect(pending.results.noLoss.byKind).toEqual({ unacked: 1, 'pending-at-end': 1 });
    // the window is an option
    const tight = checkInvariants(
      { ...input, crashes: [{ memberId: 'B', at: T + 400 }] },
      { crashWindowMs: 100 },
    );
    expect(tight.results.noLoss.byKind).toEqual({ unacked: 1 });
  });

  it('no loss: only ids handled after the killed member last sent a recorded ack can have lost their record', () => {
    // A member's acks of a shard go out one batch at a time, each carrying every id it handled
    // since the batch before; so a batch whose record died with the member holds only ids handled
    // after the send of its last recorded batch. B handled 3-0 at [120, 121], then sent an ack of
    // other ids at 130 (recorded, without 3-0), then was killed at 400: 3-0 was not in the
    // batch in flight; gone from the pending list without an ack, it is lost (e.g. a consumer
    // deleted with its pending entries), not explained by the crash.
    const input = {
      ...clean(),
      acks: [
        ...(clean().acks ?? []).filter((x) => x.m !== 'B'),
        { ...ack('B', 0, ['9-0'], 131), t0: T + 130 },
      ],
      crashes: [{ memberId: 'B', at: T + 400 }],
    };
    expect(checkInvariants(input).results.noLoss.byKind).toMatchObject({ unacked: 1 });
    // a recorded ack sent before the handling ended (or one on another shard, or after the kill
    // by a restarted B) leaves the explanation open
    for (const later of [
      { ...ack('B', 0, ['9-0'], 121), t0: T + 120.5 },
      { ...ack('B', 1, ['9-0'], 131), t0: T + 130 },
      { ...ack('B', 0, ['9-0'], 501), t0: T + 500 },
    ]) {
      const report = checkInvariants({
        ...input,
        acks: [...(clean().acks ?? []).filter((x) => x.m !== 'B'), later],
      });
      expect(report.results.noLoss.notes.ackRecordLostInCrash, JSON.stringify(later)).toBe(1);
      expect(report.results.noLoss.byKind.unacked ?? 0).toBe(0);
    }
  });
  it('per-key order: first handlings out of order, and going back past an acked number', () => {
    const input = clean();
    const swapped = checkInvariants({
      ...input,
      handled: [h('A', a1, 10, 11), h('A', a0, 12, 13), h('B', a2, 120, 121), h('C', b0, 10, 12)],
    });
    expect(swapped.results.perKeyOrder.byKind).toEqual({ 'first-handling-out-of-order': 1 });
    // a repeats after 1 was acked at 14: going back to 0 is a violation (and an after-ack duplicate)
    const back = checkInvariants({
      ...input,
      handled: [...input.handled, h('B', a0, 130, 131, 2)],
    });
    expect(back.results.perKeyOrder.byKind).toEqual({ 'went-back-past-acked': 1 });
    expect(back.results.duplicates.byKind).toEqual({ 'after-ack': 1 });
  });

  it('per-key order: an entry whose ack Redis lost comes back after a later one was acked', () => {
    const input = clean();
    // A handled a#0 and acked it at 112, inside the lost window (copy at 100, kill at 150); it
    // acked a#1 only after the restart (durable). Redis forgot a#0's ack: B, the next owner,
    // handles a#0 after a#1 was acked.
    const run: InvariantInput = {
      ...input,
      handled: [
        h('A', a0, 110, 111),
        h('A', a1, 120, 121),
        h('B', a0, 200, 201, 2),
        h('B', a2, 210, 211),
        h('C', b0, 10, 12),
      ],
      acks: [
        { ...ack('A', 0, ['1-0'], 112.5), t0: T + 112 },
        { ...ack('A', 0, ['2-0'], 161), t0: T + 160 },
        ack('B', 0, ['1-0'], 202),
        ack('B', 0, ['3-0'], 212),
        ack('C', 1, ['1-0'], 13),
      ],
      ownership: null,
      redisRollbacks: [{ snapshotAt: T + 100, killedAt: T + 150 }],
    };
    const report = checkInvariants(run);
    expect(report.results.perKeyOrder.byKind).toEqual({});
    expect(report.results.perKeyOrder.notes).toMatchObject({ redisRollback: 1 });
    // the same with a#0's ack answered before the copy (Redis kept it) is a violation
    const kept = checkInvariants({
      ...run,
      acks: [{ ...ack('A', 0, ['1-0'], 80), t0: T + 79 }, ...(run.acks ?? []).slice(1)],
      handled: [
        h('A', a0, 70, 71),
        ...(run.handled ?? []).filter((x) => !(x.m === 'A' && x.t0 === T + 110)),
      ],
    });
    expect(kept.results.perKeyOrder.byKind).toEqual({ 'went-back-past-acked': 1 });
  });

  it('per-key order allows a redelivery that repeats unacked numbers', () => {
    const input = clean();
    // A handled 0 and 1 but never acked them (killed); B handles 0, 1, 2 again.
    const report = checkInvariants({
      ...input,
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('B', a0, 115, 116, 2),
        h('B', a1, 117, 118, 2),
        h('B', a2, 120, 121),
        h('C', b0, 10, 12),
      ],
      acks: [ack('B', 0, ['1-0', '2-0', '3-0'], 122), ack('C', 1, ['1-0'], 13)],
    });
    expect(report.results.perKeyOrder.ok).toBe(true);
    expect(report.results.singleOwner.ok).toBe(true);
    expect(report.results.duplicates.notes).toMatchObject({ redelivery: 2 });
    expect(report.ok).toBe(true);
  });

  it('per-key order across a reshard: the next number on the new shard waits for the earlier ack', () => {
    // key c: #0 on shard 0 (A acks it at 20, sent at 18), #1 moved to shard 5 (B)
    const c0: ProducedMessage = { key: 'c', seq: 0, shard: 0, id: '4-0' };
    const c1: ProducedMessage = { key: 'c', seq: 1, shard: 5, id: '1-0' };
    const run = (c1Start: number, acks = true): InvariantInput => ({
      stream: 'orders',
      produced: [c0, c1],
      handled: [h('A', c0, 10, 12), h('B', c1, c1Start, c1Start + 1)],
      acks: acks
        ? [{ ...ack('A', 0, ['4-0'], 20), t0: T + 18 }, ack('B', 5, ['1-0'], c1Start + 2)]
        : [ack('B', 5, ['1-0'], c1Start + 2)],
      ownership: [own('A', 0, 0, null), own('B', 5, 0, null)],
      pending: { byShard: new Map() },
    });
    const fine = checkInvariants(run(25)).results.perKeyOrder;
    expect(fine.byKind).toEqual({});
    expect(fine.notes).toEqual({ shardChanges: 1 });
    // #1 first handled at 12: as #0 ended, 6 ms before its ack was sent
    const early = checkInvariants(run(12)).results.perKeyOrder;
    expect(early.byKind).toEqual({ 'handled-before-earlier-acked': 1 });
    expect(early.examples[0]).toContain('c#1 (shard 5)');
    // the earlier ack has no record (lost in a crash): counted, not judged
    const unverified = checkInvariants(run(12, false)).results.perKeyOrder;
    expect(unverified.byKind).toEqual({});
    expect(unverified.notes).toEqual({ shardChanges: 1, shardChangesUnverified: 1 });
    // counted once per move: a third shard later does not count shard 0's missing record again
    const c2: ProducedMessage = { key: 'c', seq: 2, shard: 7, id: '1-0' };
    const moved = checkInvariants({
      ...run(12, false),
      produced: [c0, c1, c2],
      handled: [...run(12, false).handled, h('C', c2, 40, 41)],
      acks: [...(run(12, false).acks ?? []), ack('C', 7, ['1-0'], 42)],
      ownership: [...(run(12, false).ownership ?? []), own('C', 7, 0, null)],
    }).results.perKeyOrder;
    expect(moved.byKind).toEqual({});
    expect(moved.notes).toEqual({ shardChanges: 2, shardChangesUnverified: 1 });
    // #0 published twice (its first call unanswered): the copy on shard 0, and the one published
    // again on shard 3, handled at 25 but acked at 40 only; #1 first handled at 30 is early for it
    const again: ProducedMessage = { key: 'c', seq: 0, shard: 3, id: '5-0' };
    const twice = checkInvariants({
      ...run(30),
      produced: [again, c1, c0],
      handled: [...run(30).handled, h('D', again, 25, 26)],
      acks: [...(run(30).acks ?? []), { ...ack('D', 3, ['5-0'], 40), t0: T + 39 }],
      ownership: [...(run(30).ownership ?? []), own('D', 3, 0, null)],
    }).results.perKeyOrder;
    expect(twice.byKind).toEqual({ 'handled-before-earlier-acked': 1 });
    expect(twice.examples[0]).toContain('before #0 (shard 3)');
  });

  it('per-key order: a pair published again after its first copies were handled', () => {
    // Stop 34's CI: c#18 and c#19 went out in one call to shard 4 (round 1) just as Redis
    // restarted; the call got no answer, members handled and acked both, a reshard removed
    // shard 4 before the producer looked, so it published both again on shard 11 (round 2).
    // The key's entries were written 18, 19, 18, 19 and were handled in that order.
    const c18: ProducedMessage = { key: 'c', seq: 18, shard: 4, id: '10-0', round: 1 };
    const c19: ProducedMessage = { key: 'c', seq: 19, shard: 4, id: '10-1', round: 1 };
    const c18again: ProducedMessage = { key: 'c', seq: 18, shard: 11, id: '20-0', round: 2 };
    const c19again: ProducedMessage = { key: 'c', seq: 19, shard: 11, id: '20-1', round: 2 };
    const run = (handled: HandledRecord[], acks: AckRecord[]): InvariantInput => ({
      stream: 'orders',
      produced: [c18again, c19again, c18, c19],
      handled,
      acks,
      ownership: [own('A', 4, 0, null), own('B', 11, 0, null)],
      pending: { byShard: new Map() },
    });
    const inOrder = run(
      [
        h('A', c18, 10, 11),
        h('A', c19, 12, 13),
        h('B', c18again, 30, 31),
        h('B', c19again, 32, 33),
      ],
      [
        { ...ack('A', 4, ['10-0', '10-1'], 14), t0: T + 13.5 },
        { ...ack('B', 11, ['20-0', '20-1'], 34), t0: T + 33.5 },
      ],
    );
    const fine = checkInvariants(inOrder).results.perKeyOrder;
    expect(fine.byKind).toEqual({});
    expect(fine.notes).toMatchObject({ shardChanges: 1 });
    // a later message whose write Redis lost in a rollback keeps its place in the order too
    const c20: ProducedMessage = { key: 'c', seq: 20, shard: 11, id: '30-0', round: 3 };
    const lost = checkInvariants({
      ...inOrder,
      produced: [...inOrder.produced, c20],
      handled: [...inOrder.handled, h('B', c20, 40, 41)],
      lostByRedis: [{ shard: 11, id: '30-0' }],
      redisRollbacks: [{ snapshotAt: T + 35, killedAt: T + 45 }],
    }).results.perKeyOrder;
    expect(lost.byKind).toEqual({});
    // the second copies out of order on their shard still fail: with an ack between them, and
    // with one ack for both (the usual batch)
    const swapped = (acks: AckRecord[]): InvariantResult =>
      checkInvariants(
        run(
          [
            h('A', c18, 10, 11),
            h('A', c19, 12, 13),
            h('B', c19again, 30, 31),
            h('B', c18again, 32, 33),
          ],
          [{ ...ack('A', 4, ['10-0', '10-1'], 14), t0: T + 13.5 }, ...acks],
        ),
      ).results.perKeyOrder;
    expect(
      swapped([
        { ...ack('B', 11, ['20-1'], 31.5), t0: T + 31.2 },
        { ...ack('B', 11, ['20-0'], 34), t0: T + 33.5 },
      ]).byKind,
    ).toEqual({ 'went-back-past-acked': 1, 'first-handling-out-of-order': 1 });
    expect(swapped([{ ...ack('B', 11, ['20-1', '20-0'], 110), t0: T + 109 }]).byKind).toEqual({
      'first-handling-out-of-order': 1,
    });
    // a second copy handled on the new shard while the first copy of #19 is still being handled
    // on the old one: it waits for the ack of every entry written before it on another shard
    const overlap = checkInvariants(
      run(
        [
          h('A', c18, 10, 11),
          h('A', c19, 12, 40),
          h('B', c18again, 20, 24),
          h('B', c19again, 50, 51),
        ],
        [
          { ...ack('A', 4, ['10-0'], 11.5), t0: T + 11.2 },
          { ...ack('B', 11, ['20-0'], 26), t0: T + 25 },
          { ...ack('A', 4, ['10-1'], 42), t0: T + 41 },
          { ...ack('B', 11, ['20-1'], 53), t0: T + 52 },
        ],
      ),
    ).results.perKeyOrder;
    expect(overlap.byKind).toEqual({ 'handled-before-earlier-acked': 1 });
    expect(overlap.examples[0]).toContain('c#18 (shard 11) first handled by B');
    expect(overlap.examples[0]).toContain('before #19 (shard 4)');
    // and both second copies handled before the first copies were acked
    const early = checkInvariants(
      run(
        [
          h('A', c18, 10, 20),
          h('A', c19, 21, 22),
          h('B', c18again, 12, 13),
          h('B', c19again, 14, 15),
        ],
        [
          { ...ack('A', 4, ['10-0', '10-1'], 24), t0: T + 23 },
          { ...ack('B', 11, ['20-0', '20-1'], 16), t0: T + 15.5 },
        ],
      ),
    ).results.perKeyOrder;
    expect(early.byKind).toMatchObject({ 'handled-before-earlier-acked': 2 });
    expect(early.examples.join('\n')).toContain('c#19 (shard 11) first handled by B');
  });

  it('single owner: overlapping committed handlings of two members on a shard', () => {
    const input = clean();
    const report = checkInvariants({
      ...input,
      handled: [h('A', a0, 10, 11), h('A', a1, 12, 30), h('B', a2, 20, 21), h('C', b0, 10, 12)],
      acks: [ack('A', 0, ['1-0', '2-0'], 31), ack('B', 0, ['3-0'], 22), ack('C', 1, ['1-0'], 13)],
      ownership: null,
    });
    expect(report.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
  });

  it('single owner ignores a zombie in-flight handling whose ack was refused, zombie safety counts it', () => {
    const input = clean();
    // A started 2 at 90 (owned), froze, lost the shard at 100, finished at 200; B handled 2 at 120.
    const report = checkInvariants({ ...input, handled: [...input.handled, h('A', a2, 90, 200)] });
    expect(report.results.singleOwner.ok).toBe(true);
    expect(report.results.zombieSafety.ok).toBe(true);
    expect(report.counts.zombieInFlight).toBe(1);
    // ... but had its ack gone through, both invariants fail
    const acked = checkInvariants({
      ...input,
      handled: [...input.handled, h('A', a2, 90, 200)],
      acks: [...(input.acks ?? []), ack('A', 0, ['3-0'], 201)],
    });
    expect(acked.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
    expect(acked.results.zombieSafety.byKind).toEqual({ 'acked-without-ownership': 1 });
  });

  it("single owner: a zombie's refused handling is not committed by its ack of a later delivery", () => {
    const input = clean();
    // A started 2 at 90 and froze; B owned shard 0 from 110, handled 2 at 120 (killed before its
    // ack) and 3 at 130 (acked); A woke up at 200 (its ack of 2 refused), got the shard back at
    // 190..., handled 2 again at 210 and acked that at 212. The ack at 212 is for the handling at
    // 210, not for the one B's committed handling overlaps.
    const a3: ProducedMessage = { key: 'a', seq: 3, shard: 0, id: '4-0' };
    const run: InvariantInput = {
      ...input,
      produced: [...produced, a3],
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('A', a2, 90, 200),
        h('B', a2, 120, 121, 2),
        h('B', a3, 130, 131),
        h('A', a2, 210, 211, 3),
      ],
      acks: [
        ack('A', 0, ['1-0', '2-0'], 14),
        ack('B', 0, ['4-0'], 132),
        { ...ack('A', 0, ['3-0'], 212), t0: T + 211.5 },
      ],
      ownership: [
        own('A', 0, 0, 100),
        own('B', 0, 110, 180),
        own('A', 0, 190, null),
        own('C', 1, 0, null),
      ],
    };
    const report = checkInvariants(run);
    expect(report.results.singleOwner.byKind).toEqual({});
    expect(report.results.zombieSafety.byKind).toEqual({});
    // ... while the same ack sent before A's second handling ended commits the frozen one
    const early = checkInvariants({
      ...run,
      handled: (run.handled ?? []).filter((x) => x.t0 !== T + 210),
      acks: [...(run.acks ?? []).slice(0, 2), { ...ack('A', 0, ['3-0'], 212), t0: T + 201 }],
    });
    expect(early.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
  });

  it('single owner: an overlap is explained by a Redis rollback that restored the earlier fence, only then', () => {
    const input = clean();
    // A started 2 at 90 and froze; Redis's copy was taken at 100; A expired, B was granted the
    // shard (the grant, B's handling and B's ack are in the lost window: the timeline has no B);
    // Redis was killed at 150 and came back with A's fence; A woke up and acked 2 at 201.
    const run: InvariantInput = {
      ...input,
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('A', a2, 90, 200),
        h('B', a2, 120, 121, 2),
      ],
      acks: [ack('A', 0, ['1-0', '2-0'], 14), ack('B', 0, ['3-0'], 122), ack('A', 0, ['3-0'], 201)],
      ownership: [own('A', 0, 0, null), own('C', 1, 0, null)],
    };
    const rolledBack = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 100, killedAt: T + 150 }],
    });
    expect(rolledBack.results.singleOwner.byKind).toEqual({});
    expect(rolledBack.results.singleOwner.notes).toEqual({ redisRollback: 1 });
    // the same overlap with no rollback is a violation
    const plain = checkInvariants(run);
    expect(plain.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
    // ... and so it is when the rollback cannot have undone B's ack (answered before the copy),
    const survived = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 130, killedAt: T + 150 }],
    });
    expect(survived.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
    // when A acked before Redis was killed (the fence still named B then),
    const ackedBeforeKill = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 100, killedAt: T + 250 }],
    });
    expect(ackedBeforeKill.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
    // or when the timeline kept B's grant (the fence change to B survived the rollback)
    const grantKept = checkInvariants({
      ...run,
      ownership: [own('A', 0, 0, 105), own('B', 0, 105, null), own('C', 1, 0, null)],
      redisRollbacks: [{ snapshotAt: T + 100, killedAt: T + 150 }],
    });
    expect(grantKept.results.singleOwner.byKind).toEqual({ 'two-members-at-once': 1 });
  });

  it('zombie safety: an ack seen after the loss counts by when it can have been sent', () => {
    const input = clean();
    // A handled 0 and 1 before losing shard 0 at 100; the ack's reply was only seen at 150 (a
    // stall): it may have been executed before the loss, so it is a note, not a violation
    const late = checkInvariants({
      ...input,
      acks: [ack('A', 0, ['1-0', '2-0'], 150), ack('B', 0, ['3-0'], 122), ack('C', 1, ['1-0'], 13)],
    });
    expect(late.results.zombieSafety.ok).toBe(true);
    expect(late.results.zombieSafety.notes).toMatchObject({ ackObservedAfterLoss: 1 });
    // with its send time in the record, a send after the loss is a violation
    const sent = checkInvariants({
      ...input,
      acks: [
        { ...ack('A', 0, ['1-0', '2-0'], 150), t0: T + 140 },
        ack('B', 0, ['3-0'], 122),
        ack('C', 1, ['1-0'], 13),
      ],
    });
    expect(sent.results.zombieSafety.byKind).toEqual({ 'acked-without-ownership': 1 });
  });

  it('single owner: one member handling two messages of a shard at once', () => {
    const input = clean();
    const report = checkInvariants({
      ...input,
      handled: [h('A', a0, 10, 13), h('A', a1, 12, 14), h('B', a2, 120, 121), h('C', b0, 10, 12)],
    });
    expect(report.results.singleOwner.byKind).toEqual({ 'concurrent-in-member': 1 });
  });

  it('single owner, ordering key: different keys of a shard at once pass, one key at once fails', () => {
    const c0: ProducedMessage = { key: 'c', seq: 0, shard: 0, id: '2-5' };
    const input = clean();
    const overlapOtherKey = checkInvariants(
      {
        ...input,
        produced: [...produced, c0],
        handled: [...input.handled, h('A', c0, 11, 16)],
        acks: [...(input.acks ?? []), ack('A', 0, ['2-5'], 17)],
      },
      { ordering: 'key' },
    );
    expect(overlapOtherKey.results.singleOwner.byKind).toEqual({});
    expect(overlapOtherKey.ok).toBe(true);
    const sameKey = checkInvariants(
      {
        ...input,
        handled: [h('A', a0, 10, 13), h('A', a1, 12, 14), h('B', a2, 120, 121), h('C', b0, 10, 12)],
      },
      { ordering: 'key' },
    );
    expect(sameKey.results.singleOwner.byKind).toEqual({ 'key-concurrent-in-member': 1 });
  });

  it('zombie safety: a handling started after the shard was lost', () => {
    const input = clean();
    const report = checkInvariants({
      ...input,
      handled: [...input.handled, h('A', a2, 150, 151, 2)],
    });
    expect(report.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
    expect(report.results.zombieSafety.examples[0]).toMatch(/ended at .* \(SHARDS_RELEASED\)/);
  });

  it('zombie safety: a timeline granting a shard to two members', () => {
    const report = checkInvariants({
      ...clean(),
      ownership: [own('A', 0, 0, 100), own('B', 0, 50, null), own('C', 1, 0, null)],
    });
    expect(report.results.zombieSafety.byKind).toEqual({ 'coordinator-double-grant': 1 });
  });

  it('duplicates with the same delivery count are unexplained', () => {
    const input = clean();
    const report = checkInvariants({
      ...input,
      acks: null,
      handled: [...input.handled, h('B', a2, 125, 126, 1)],
    });
    expect(report.results.duplicates.byKind).toEqual({ 'same-delivery': 1 });
  });

  it('a Redis rollback: messages it lost are counted apart, an ack it lost means a redelivery', () => {
    const input = clean();
    // b#1 was published and handled, then Redis lost its XADD; A's ack of a#1 (answered after
    // the snapshot) was lost too, so a#1 is delivered again with delivery count 1
    const lost: ProducedMessage = { key: 'b', seq: 1, shard: 1, id: '2-0' };
    const run: InvariantInput = {
      ...input,
      produced: [...produced, lost],
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('C', b0, 10, 12),
        h('C', lost, 14, 15),
        h('A', a1, 30, 31),
        h('B', a2, 120, 121),
      ],
      acks: [
        { ...ack('A', 0, ['1-0'], 11.2), t0: T + 11.1 },
        { ...ack('A', 0, ['2-0'], 14), t0: T + 13.5 },
        ack('C', 1, ['1-0'], 13),
        ack('A', 0, ['2-0'], 32),
        ack('B', 0, ['3-0'], 122),
      ],
    };
    const withoutRollback = checkInvariants(run);
    expect(withoutRollback.results.noLoss.byKind).toEqual({ unacked: 1 });
    expect(withoutRollback.results.duplicates.byKind).toEqual({ 'after-ack': 1 });
    const report = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 11.5, killedAt: T + 20 }],
      lostByRedis: [{ shard: 1, id: '2-0' }],
    });
    expect(report.ok).toBe(true);
    expect(report.results.noLoss.notes).toMatchObject({ lostByRedis: 1 });
    expect(report.results.duplicates.notes).toMatchObject({ redisRollback: 1 });
    // a repeat with the same delivery count and no rollback in between is still a violation
    const late = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 50, killedAt: T + 60 }],
      lostByRedis: [{ shard: 1, id: '2-0' }],
    });
    expect(late.results.duplicates.byKind).toEqual({ 'after-ack': 1 });
  });

  it('a Redis rollback that lost a delivery: the ack of the forgotten delivery is no ack', () => {
    const input = clean();
    // A read a#2 before the kill, Redis forgot that delivery; A acks it after the restart
    // (acknowledging nothing) and reads it again as new (delivery count 1 again)
    const run: InvariantInput = {
      ...input,
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('A', a2, 15, 16),
        h('A', a2, 32, 33),
        h('C', b0, 10, 12),
      ],
      acks: [
        ack('A', 0, ['1-0', '2-0'], 14),
        { ...ack('A', 0, ['3-0'], 31), t0: T + 30 },
        ack('A', 0, ['3-0'], 34),
        ack('C', 1, ['1-0'], 13),
      ],
      redisRollbacks: [{ snapshotAt: T + 14.5, killedAt: T + 20 }],
    };
    expect(checkInvariants(run).results.duplicates.byKind).toEqual({ 'after-ack': 1 });
    const report = checkInvariants({ ...run, deliveryLostByRedis: [{ shard: 0, id: '3-0' }] });
    expect(report.ok).toBe(true);
    expect(report.results.duplicates.notes).toMatchObject({ redisRollback: 1 });
  });

  it('duplicates: an ack Redis lost brings the entry back to its member at the same count', () => {
    const input = clean();
    // C handled b#0 well before the copy, acked it inside the lost window (Redis forgot the ack),
    // and after the restart handed it again at delivery 1 (a key-ordered reader counts no
    // delivery for an entry it acked)
    const run: InvariantInput = {
      ...input,
      handled: [
        ...input.handled.filter((x) => x.m !== 'C'),
        h('C', b0, 10, 12),
        h('C', b0, 60, 61),
      ],
      acks: [
        ...(input.acks ?? []).filter((a) => a.m !== 'C'),
        { ...ack('C', 1, ['1-0'], 38.5), t0: T + 38 },
        { ...ack('C', 1, ['1-0'], 62.5), t0: T + 62 },
      ],
      redisRollbacks: [{ snapshotAt: T + 40, killedAt: T + 50 }],
    };
    const report = checkInvariants(run);
    expect(report.results.duplicates.byKind).toEqual({});
    expect(report.results.duplicates.notes).toMatchObject({ redisRollback: 1 });
    // another member handing it at the same count is not explained by that
    const other = checkInvariants({
      ...run,
      handled: [
        ...input.handled.filter((x) => x.m !== 'C'),
        h('C', b0, 10, 12),
        h('D', b0, 60, 61),
      ],
    });
    expect(other.results.duplicates.byKind).toEqual({ 'same-delivery': 1 });
  });

  it('duplicates: the tail of a batch read under a grant Redis lost comes back at the same count', () => {
    const input = clean();
    // A handled a#0 and a#1 (not acked) and stalled; in the lost window (100..150) B was granted
    // the shard (the timeline lost that grant), claimed both (count 2), handled a#0 inside the
    // window and a#1 after the kill, the tail of its batch (its acks refused: the restored fence
    // names A). A, the restored owner, claims both again: Redis forgot B's claim, so also at 2.
    const run: InvariantInput = {
      ...input,
      handled: [
        h('A', a0, 10, 11),
        h('A', a1, 12, 13),
        h('B', a0, 110, 111, 2),
        h('B', a1, 160, 161, 2),
        h('A', a0, 298, 299, 2),
        h('A', a1, 300, 301, 2),
        h('A', a2, 304, 305),
        h('C', b0, 10, 12),
      ],
      acks: [ack('A', 0, ['1-0', '2-0'], 302), ack('A', 0, ['3-0'], 306), ack('C', 1, ['1-0'], 13)],
      ownership: [own('A', 0, 0, null), own('C', 1, 0, null)],
      redisRollbacks: [{ snapshotAt: T + 100, killedAt: T + 150 }],
    };
    const report = checkInvariants(run);
    expect(report.results.duplicates.byKind).toEqual({});
    expect(report.results.duplicates.notes).toMatchObject({ redisRollback: 2 });
    // without B's handling inside the window, its late one is no tail of a lost read
    const noTail = checkInvariants({
      ...run,
      handled: (run.handled ?? []).filter((x) => !(x.m === 'B' && x.t0 === T + 110)),
    });
    expect(noTail.results.duplicates.byKind).toEqual({ 'same-delivery': 1 });
    // nor is a repeat by a member the timeline does not name (not the restored owner)
    const notOwner = checkInvariants({ ...run, ownership: [own('C', 1, 0, null)] });
    expect(notOwner.results.duplicates.byKind).toEqual({ 'same-delivery': 1 });
  });

  it('zombie safety: a handling in a window whose event-log entries Redis lost is unverifiable, only there', () => {
    const input = clean();
    const run = { ...input, handled: [...input.handled, h('A', a2, 150, 151, 2)] };
    const inWindow = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 140, killedAt: T + 155 }],
    });
    expect(inWindow.results.zombieSafety.byKind).toEqual({});
    expect(inWindow.results.zombieSafety.notes).toMatchObject({ unverifiableLostEvents: 1 });
    const before = checkInvariants({
      ...run,
      redisRollbacks: [{ snapshotAt: T + 160, killedAt: T + 170 }],
    });
    expect(before.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
  });

  it('zombie safety: the tail of a batch read under a grant Redis lost is explained, only that', () => {
    const input = clean();
    // C owns shard 1 until 100 (released in the log); the copy is taken at 140, C is granted
    // shard 1 again at 145 (lost with the window), reads b#0 and b#1 in one batch, starts b#0 at
    // 146; Redis is killed at 150 and comes back without the grant; C goes on with b#1 at 160
    // (its ack is refused by the restored fence: no ack record)
    const b1: ProducedMessage = { key: 'b', seq: 1, shard: 1, id: '2-0' };
    const run: InvariantInput = {
      ...input,
      produced: [...produced, b1],
      handled: [...input.handled, h('C', b0, 146, 151, 2), h('C', b1, 160, 161)],
      ownership: [own('A', 0, 0, 100), own('B', 0, 110, null), own('C', 1, 0, 100)],
      redisRollbacks: [{ snapshotAt: T + 140, killedAt: T + 150 }],
    };
    const report = checkInvariants(run);
    expect(report.results.zombieSafety.byKind).toEqual({});
    expect(report.results.zombieSafety.notes).toMatchObject({
      unverifiableLostEvents: 1,
      readBeforeRollback: 1,
    });
    // without the rollback both handlings are violations
    const plain = checkInvariants({ ...run, redisRollbacks: [] });
    expect(plain.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 2 });
    // an ack of the tail that Redis accepted means the fence named C: no excuse
    const acked = checkInvariants({
      ...run,
      acks: [...(run.acks ?? []), { ...ack('C', 1, ['2-0'], 162), t0: T + 161.5 }],
    });
    expect(acked.results.zombieSafety.byKind).toEqual({
      'handled-without-ownership': 1,
      'acked-without-ownership': 1,
    });
    // C granted shard 1 again at 300 handles b#1 again and acks it: that ack is the later
    // handling's, the tail stays explained
    const regranted = checkInvariants({
      ...run,
      handled: [...run.handled, h('C', b1, 310, 311, 2)],
      acks: [...(run.acks ?? []), { ...ack('C', 1, ['2-0'], 313), t0: T + 312 }],
      ownership: [...(run.ownership ?? []), own('C', 1, 300, null)],
    });
    expect(regranted.results.zombieSafety.byKind).toEqual({});
    expect(regranted.results.zombieSafety.notes).toMatchObject({ readBeforeRollback: 1 });
    // so is an ack under that later grant with no handling before it: an exactly-once member
    // that finds b#1's effect applied acks it without running the handler again
    const skipped = checkInvariants({
      ...run,
      acks: [...(run.acks ?? []), { ...ack('C', 1, ['2-0'], 310), t0: T + 309 }],
      ownership: [...(run.ownership ?? []), own('C', 1, 300, null)],
    });
    expect(skipped.results.zombieSafety.byKind).toEqual({});
    expect(skipped.results.zombieSafety.notes).toMatchObject({ readBeforeRollback: 1 });
    // but an ack sent before that later grant is still the tail's own: no excuse
    const ackedFirst = checkInvariants({
      ...run,
      acks: [...(run.acks ?? []), { ...ack('C', 1, ['2-0'], 299), t0: T + 290 }],
      ownership: [...(run.ownership ?? []), own('C', 1, 300, null)],
    });
    expect(ackedFirst.results.zombieSafety.byKind).toMatchObject({
      'handled-without-ownership': 1,
    });
    // a member still handling long after the kill is a zombie, not a batch's tail
    const late = checkInvariants({
      ...run,
      handled: [...input.handled, h('C', b0, 146, 151, 2), h('C', b1, 150 + 10_001, 150 + 10_002)],
    });
    expect(late.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
    // an entry written after the kill cannot have been read before it
    const newer: ProducedMessage = { ...b1, id: `${T + 151}-0` };
    const later = checkInvariants({
      ...run,
      produced: [...produced, newer],
      handled: [...input.handled, h('C', b0, 146, 151, 2), h('C', newer, 160, 161)],
    });
    expect(later.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
    // nor does it explain a member whose last handling in the window the timeline covers, or
    // one that handled nothing of the shard in the window
    const covered = checkInvariants({
      ...run,
      ownership: [own('A', 0, 0, 100), own('B', 0, 110, null), own('C', 1, 0, 148)],
    });
    expect(covered.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
    const noneInWindow = checkInvariants({
      ...run,
      handled: [...input.handled, h('C', b1, 160, 161)],
    });
    expect(noneInWindow.results.zombieSafety.byKind).toEqual({ 'handled-without-ownership': 1 });
  });

  it('builds the ownership timeline from the event log', () => {
    const at = (ms: number): string => new Date(T + ms).toISOString();
    const intervals = ownershipFromEvents([
      {
        id: '1-0',
        type: 'SHARDS_ASSIGNED',
        at: at(0),
        groupEpoch: 1,
        data: { memberId: 'A', shards: [{ stream: 'orders', shards: [0, 1] }] },
      },
      {
        id: '2-0',
        type: 'SHARDS_RELEASED',
        at: at(100),
        groupEpoch: 2,
        data: { memberId: 'A', shards: [{ stream: 'orders', shards: [1] }] },
      },
      {
        id: '3-0',
        type: 'SHARDS_ASSIGNED',
        at: at(110),
        groupEpoch: 2,
        data: { memberId: 'B', shards: [{ stream: 'orders', shards: [1] }] },
      },
      {
        id: '4-0',
        type: 'MEMBER_EXPIRED',
        at: at(300),
        groupEpoch: 3,
        data: { memberId: 'A', released: [] },
      },
    ]);
    expect(intervals).toEqual([
      {
        memberId: 'A',
        stream: 'orders',
        shard: 0,
        from: T,
        to: T + 300,
        endedBy: 'MEMBER_EXPIRED',
      },
      {
        memberId: 'A',
        stream: 'orders',
        shard: 1,
        from: T,
        to: T + 100,
        endedBy: 'SHARDS_RELEASED',
      },
      { memberId: 'B', stream: 'orders', shard: 1, from: T + 110, to: null, endedBy: null },
    ]);
  });
});
