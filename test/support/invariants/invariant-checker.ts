import type {
  AckRecord,
  HandledRecord,
  InvariantInput,
  InvariantOptions,
  OwnershipInterval,
  ProducedMessage,
  RedisRollback,
} from './invariant-input.types.js';
import type {
  InvariantCounts,
  InvariantReport,
  InvariantResult,
} from './invariant-report.types.js';
import { ViolationLog } from './violation-log.js';

/** How long after a rollback's kill a handling can still be the tail of a batch read before it. */
const READ_TAIL_MAX_MS = 10_000;
/** How many handlings such a tail can hold: more than any read batch or key-ordered buffer. */
const READ_TAIL_MAX_HANDLINGS = 1_000;

/**
 * Checks a run of the stream coordinator against its delivery invariants.
 *
 * Terms. A message is identified by (shard, entry id). A *handling* is one successful handler
 * call (a {@link HandledRecord}); it spans [t0, t1]. A handling is *committed* when its member's
 * ack of it took effect: with ack records, when an ack record of the same member and shard lists
 * the id at or after t1 and was sent before any later handling of the id by that member ended
 * (that ack is the later handling's); without them, when it is the message's last handling (by
 * start time) and the message is not pending at the end (nothing is delivered again after an ack). A
 * message's *ack time* is the earliest ack record listing it (without ack records: the end of
 * its last handling).
 *
 * 1. **noLoss** — every produced message was handled (or dead-lettered) at least once and
 *    acked: listed in an ack record (when there are ack records) and not in the final pending
 *    entries (when a snapshot is given). Handlings or pending entries of unknown messages are
 *    violations too (the bookkeeping would be wrong). One exception, counted as
 *    `ackRecordLostInCrash`: a message that is in no ack record but not pending at the end
 *    either, whose last handling's member was killed (`crashes`) within `crashWindowMs` after
 *    that handling ended, and which that member handled after it sent its last recorded ack of
 *    the shard (only such ids can be in the batch in flight at the kill) — Redis applied the
 *    ack, the process died before it wrote the record.
 * 2. **perKeyOrder** — a key's entries were written in `(round, seq)` order: per-key sequence
 *    numbers, and the producer's publish attempt (`round`, 0 when not given), since a message
 *    whose first call got no answer may be written again in a later attempt, after higher
 *    numbers (a copy per attempt). Per key, in handling start order, each entry's first handling
 *    comes in that order; and no handling starts after an entry of the key later in that order
 *    was acked (a redelivery may repeat entries, never go back past an acked one). The sequence
 *    number in the record must match the produced one. Where a key's entries are on more than
 *    one shard (a reshard moved the key, or a copy went to the new layout), an entry's first
 *    handling must not start before the ack of every earlier entry on another shard was sent
 *    (`handled-before-earlier-acked`; with ack records only: the reshard keeps per-key order by
 *    draining the old shard first); such shard changes are counted (`shardChanges`), and
 *    earlier entries without an ack record (lost in a crash) as `shardChangesUnverified`.
 * 3. **singleOwner** — on one shard, no two committed handlings of different members overlap in
 *    time; and one member's handlings of one shard (committed or not) never overlap (a shard's
 *    messages are handled one after another) — with `ordering: 'key'`, one member's handlings of
 *    one key never overlap (different keys of a shard are handled at once). Only committed handlings count across members
 *    because a handler cannot be pre-empted: a member that is frozen (SIGSTOP) or cut off
 *    inside a handler loses the shard while the call is in flight, and finishes it later, while
 *    the new owner already works on the shard. That late call is not the shard's progress: its
 *    ack is refused by the data-plane fence, the entry stays pending and the new owner handles
 *    it again — exactly as if the zombie had crashed (at-least-once). What must never happen is
 *    two members' handlings both taking effect at once, or a zombie starting a new handling or
 *    getting an ack through; the latter two are invariant 4.
 * 4. **zombieSafety** (needs the ownership timeline) — no handling starts while its member does
 *    not own the shard, and no ack that Redis accepted was sent by a member that did not own the
 *    shard then. An ack record is written when the member sees the reply, which can be long
 *    after Redis executed it (an event-loop stall or a freeze in between), so the send time
 *    counts: the record's `t0` when it has one; else the send time is only known to lie between
 *    the end of the member's last handling of an acked id and `t`, and the ack is a violation
 *    only when that whole window lies outside the member's ownership (otherwise it is counted as
 *    `ackObservedAfterLoss`). Handlings that started inside ownership and ended after it are
 *    counted (`zombieInFlight`), not violations. The timeline itself must never give one shard
 *    to two members at once.
 * 5. **duplicates** — handlings beyond the first per message are counted: `redelivery` (a later
 *    delivery, expected under at-least-once) is a note; a repeat with no higher delivery count
 *    (`same-delivery`) or one that started after the message was acked (`after-ack`) is a
 *    violation.
 *
 * When Redis lost writes (`redisRollbacks`): the messages whose `XADD` Redis lost
 * (`lostByRedis`) are counted as such in noLoss and otherwise only keep their place in their
 * key's order (handlings of them that a member made before the loss are still checked for
 * going back and first-handling order) — no one can deliver them after the loss, and they are
 * never counted as lost by the coordinator or the library. An ack Redis may have lost (answered
 * at or after a rollback's `snapshotAt`, sent before its `killedAt`) does not count as an ack
 * for going back past an acked entry and `after-ack` (the shard-change check still takes the
 * earliest ack sent, which only makes it more lenient): the message is delivered again, which
 * at-least-once allows. Nor does, for a message whose delivery Redis may have lost
 * (`deliveryLostByRedis`: kept, but above the group's surviving last-delivered-id), an ack sent
 * before the message's last handling ended: acking a delivery Redis forgot acknowledges nothing,
 * and the message is read again as new. A repeat with the same delivery count of such a message,
 * or one whose earlier handling started in a rollback's window and which itself starts after the
 * kill, is counted as `redisRollback`, not `same-delivery` (Redis lost the delivery and its
 * count). The event-log entries of a lost window are gone too, so a handling started or an ack
 * sent in it that the timeline does not cover is counted as `unverifiableLostEvents` in zombie
 * safety, and so is the tail of a batch its member read in the window under a grant the
 * timeline lacks and went on handling after the kill (`readBeforeRollback`: handlings of entries
 * older than the kill, never acked under that grant — after the restart the fence refuses the
 * acks; an ack under a later grant the timeline shows is that grant's — each after a
 * handling of the shard the member started in the window or one of the same kind; a member the
 * restored fence names is in the timeline, and its acks get through). Single owner holds there
 * too, with one exception noted as `redisRollback`: a member frozen in a handler started before
 * the copy, whose shard went to another member in the lost window, acks that handling after the
 * restart, which brought its fence back. The other member's
 * handling counts as undone (not a violation) only when it started in the window, the timeline
 * has no grant of the shard to its member then (the grant's entry was lost), and every ack of it
 * was sent before the kill and answered after the copy; and when the earlier handling started
 * before the copy and every ack of it was sent after the kill while the timeline shows its member
 * owning the shard.
 */
export function checkInvariants(
  input: InvariantInput,
  options: InvariantOptions = {},
): InvariantReport {
  const ctx = new CheckContext(input, options);
  const results = {
    noLoss: checkNoLoss(ctx),
    perKeyOrder: checkPerKeyOrder(ctx),
    singleOwner: checkSingleOwner(ctx),
    zombieSafety: checkZombieSafety(ctx),
    duplicates: checkDuplicates(ctx),
  };
  const counts: InvariantCounts = {
    produced: input.produced.length,
    handledRecords: ctx.handled.length,
    distinctHandled: ctx.handlingsOf.size,
    ackRecords: ctx.acks?.length ?? 0,
    ackedIds: ctx.ackedAt.size,
    duplicates: ctx.handled.length - ctx.handlingsOf.size,
    redeliveredHandlings: ctx.handled.filter((h) => h.d > 1).length,
    zombieInFlight: results.zombieSafety.notes.zombieInFlight ?? 0,
    deadLettered: ctx.deadLettered.size,
    deadLetteredUnhandled: [...ctx.deadLettered].filter((key) => !ctx.handlingsOf.has(key)).length,
    pendingAtEnd: ctx.pendingIds.size,
    keys: new Set(input.produced.map((p) => p.key)).size,
    shards: new Set([...input.produced.map((p) => p.shard), ...ctx.handled.map((h) => h.s)]).size,
    handledByMember: countBy(ctx.handled, (h) => h.m),
    minHandOffGapMs: ctx.minHandOffGap,
    handOffs: ctx.handOffs,
  };
  return {
    ok: Object.values(results).every((r) => r.ok),
    ackSource: ctx.acks ? 'ack-records' : input.pending ? 'pending-snapshot' : 'none',
    results,
    counts,
  };
}

/** Indexes shared by the checks. */
class CheckContext {
  readonly handled: HandledRecord[];
  readonly acks: AckRecord[] | null;
  readonly slack: number;
  readonly maxExamples: number;
  /** The workers' `ordering`: with `key`, one member handles different keys of a shard at once. */
  readonly ordering: 'shard' | 'key';
  readonly produced = new Map<string, ProducedMessage>();
  /** message → the publish attempt that wrote it (Redis-lost messages included). */
  readonly roundOf = new Map<string, number>();
  /** message → handlings, by start time. */
  readonly handlingsOf = new Map<string, HandledRecord[]>();
  /** member|shard → its handlings, by start time. */
  readonly handledBy = new Map<string, HandledRecord[]>();
  /** message → earliest ack time. */
  readonly ackedAt = new Map<string, number>();
  /** message → earliest time an ack of it was sent (`t0`, else `t`). */
  readonly ackSentAt = new Map<string, number>();
  /** member|shard → entry id → (answer time, send time) of each ack listing it. */
  readonly acksBy = new Map<string, Map<string, Array<{ t: number; sent: number }>>>();
  /** member|shard → its ack records. */
  readonly ackRecordsBy = new Map<string, AckRecord[]>();
  /** member|shard → ownership intervals, by start. */
  readonly ownershipBy = new Map<string, OwnershipInterval[]>();
  /** member|shard → every ack record's (answer time, send time). */
  readonly ackBatchesBy = new Map<string, Array<{ t: number; sent: number }>>();
  readonly pendingIds = new Map<string, string>();
  readonly deadLettered = new Set<string>();
  /** member → kill times, ascending. */
  readonly crashesOf = new Map<string, number[]>();
  readonly crashWindow: number;
  /** Messages whose `XADD` Redis lost. */
  readonly lostByRedis = new Set<string>();
  /** Messages whose delivery Redis may have lost. */
  readonly deliveryLost = new Set<string>();
  readonly rollbacks: readonly RedisRollback[];
  /** message → earliest ack time among acks Redis cannot have lost. */
  readonly durableAckedAt = new Map<string, number>();
  /** message → the earliest kill time of a rollback that may have undone an ack of it. */
  readonly ackLostAt = new Map<string, number>();
  minHandOffGap: number | null = null;
  handOffs = 0;

  constructor(
    readonly input: InvariantInput,
    options: InvariantOptions,
  ) {
    this.slack = options.clockSlackMs ?? 5;
    this.maxExamples = options.maxExamples ?? 20;
    this.ordering = options.ordering ?? 'shard';
    this.crashWindow = options.crashWindowMs ?? 3000;
    for (const c of input.crashes ?? []) push(this.crashesOf, c.memberId, c.at);
    for (const list of this.crashesOf.values()) list.sort((a, b) => a - b);
    this.handled = input.handled.filter((h) => h.st === input.stream).sort(byStart);
    this.acks = input.acks
      ? input.acks.filter((a) => a.st === undefined || a.st === input.stream)
      : null;
    this.rollbacks = input.redisRollbacks ?? [];
    for (const l of input.lostByRedis ?? []) this.lostByRedis.add(msgKey(l.shard, l.id));
    for (const l of input.deliveryLostByRedis ?? []) this.deliveryLost.add(msgKey(l.shard, l.id));
    for (const p of input.produced) {
      const key = msgKey(p.shard, p.id);
      this.roundOf.set(key, p.round ?? 0);
      if (!this.lostByRedis.has(key)) this.produced.set(key, p);
    }
    for (const h of this.handled) {
      push(this.handlingsOf, msgKey(h.s, h.id), h);
      push(this.handledBy, `${h.m}|${h.s}`, h);
    }
    for (const a of this.acks ?? []) {
      const byId = getOrCreate(
        this.acksBy,
        `${a.m}|${a.s}`,
        () => new Map<string, Array<{ t: number; sent: number }>>(),
      );
      const sent = a.t0 ?? a.t;
      const undoneBy = this.undoneBy(a);
      push(this.ackBatchesBy, `${a.m}|${a.s}`, { t: a.t, sent });
      push(this.ackRecordsBy, `${a.m}|${a.s}`, a);
      for (const id of a.a) {
        const key = msgKey(a.s, id);
        const earliest = this.ackedAt.get(key);
        if (earliest === undefined || a.t < earliest) this.ackedAt.set(key, a.t);
        const firstSent = this.ackSentAt.get(key);
        if (firstSent === undefined || sent < firstSent) this.ackSentAt.set(key, sent);
        push(byId, id, { t: a.t, sent });
        if (undoneBy !== undefined) {
          const lost = this.ackLostAt.get(key);
          if (lost === undefined || undoneBy.killedAt < lost)
            this.ackLostAt.set(key, undoneBy.killedAt);
        }
        if (undoneBy === undefined && !this.ackOfLostDelivery(key, a)) {
          const durable = this.durableAckedAt.get(key);
          if (durable === undefined || a.t < durable) this.durableAckedAt.set(key, a.t);
        }
      }
    }
    for (const [shard, entries] of input.pending?.byShard ?? []) {
      for (const e of entries) this.pendingIds.set(msgKey(shard, e.id), e.consumer);
    }
    for (const d of input.deadLettered ?? []) this.deadLettered.add(msgKey(d.shard, d.id));
    for (const i of input.ownership ?? []) push(this.ownershipBy, `${i.memberId}|${i.shard}`, i);
    for (const list of this.ownershipBy.values()) list.sort((a, b) => a.from - b.from);
  }

  /** The member's ownership interval of the shard that covers `t` (within the clock slack). */
  covering(member: string, shard: number, t: number): OwnershipInterval | undefined {
    return this.ownershipBy
      .get(`${member}|${shard}`)
      ?.find((i) => i.from - this.slack <= t && (i.to === null || t <= i.to + this.slack));
  }

  /** The ack records of `h`'s member that commit it (see {@link CheckContext.ackCommits}). */
  commitsOf(h: HandledRecord): AckRecord[] {
    return (this.ackRecordsBy.get(`${h.m}|${h.s}`) ?? []).filter(
      (a) => a.a.includes(h.id) && this.ackCommits(h, a.t, a.t0 ?? a.t),
    );
  }

  /**
   * Whether an ack of `h`'s id by `h`'s member, answered at `t` and sent at `sent`, commits `h`:
   * answered after `h` ended, and sent before any later handling of the id by that member ended.
   * A member acks a handling once it ended, so an ack sent after a later handling ended is that
   * one's: a frozen member's handling whose ack was refused, followed by a redelivery of the
   * entry to the same member once the shard came back, is not committed by the redelivery's ack.
   */
  ackCommits(h: HandledRecord, t: number, sent: number): boolean {
    if (t < h.t1) return false;
    const list = this.handlingsOf.get(msgKey(h.s, h.id)) ?? [];
    return !list.some((o) => o !== h && o.m === h.m && o.t1 > h.t1 && o.t1 <= sent + this.slack);
  }

  /**
   * Whether a rollback explains why `later`, another member's committed handling, overlaps
   * `earlier` (see {@link checkInvariants}): `later` started in the rollback's lost window while
   * the timeline shows no grant of the shard to its member (the grant was among the lost
   * event-log entries) and the rollback may have undone every ack of it; `earlier` started before
   * the copy was taken (the copy holds its member's fence), and every ack of it was sent after
   * the kill, while the timeline shows its member owning the shard (the restarted Redis's fence
   * named it again). Needs ack records and the timeline.
   */
  overlapUndoneByRollback(earlier: HandledRecord, later: HandledRecord): boolean {
    if (this.acks === null || this.input.ownership === null) return false;
    if (this.covering(later.m, later.s, later.t0)) return false;
    const laterAcks = this.commitsOf(later);
    const earlierAcks = this.commitsOf(earlier);
    return this.rollbacks.some((r) => {
      const inWindow = (t: number): boolean =>
        t >= r.snapshotAt - this.slack && t <= r.killedAt + this.slack;
      return (
        inWindow(later.t0) &&
        laterAcks.every((a) => a.t >= r.snapshotAt - this.slack && inWindow(a.t0 ?? a.t)) &&
        earlier.t0 <= r.snapshotAt + this.slack &&
        earlierAcks.every(
          (a) =>
            (a.t0 ?? a.t) >= r.killedAt - this.slack &&
            this.covering(earlier.m, earlier.s, a.t0 ?? a.t) !== undefined,
        )
      );
    });
  }

  /**
   * The first rollback that may have undone this ack (answered after its snapshot, sent before its
   * kill), if any.
   */
  undoneBy(a: AckRecord): RedisRollback | undefined {
    const sent = a.t0 ?? a.t;
    return this.rollbacks.find(
      (r) => a.t >= r.snapshotAt - this.slack && sent <= r.killedAt + this.slack,
    );
  }

  /**
   * Whether `h` handles an entry again because Redis lost its ack: an ack of the entry may have
   * been undone by a rollback that was over when `h` started. Its member acked it, later entries of
   * the key were acked after the restart (durably), and the restored Redis delivers the entry
   * again after them: per-key order goes back, by a write Redis lost (docs/operations.md).
   */
  repeatedAfterLostAck(h: HandledRecord): boolean {
    const killedAt = this.ackLostAt.get(msgKey(h.s, h.id));
    return killedAt !== undefined && h.t0 >= killedAt - this.slack;
  }

  /**
   * Whether `t` lies in a rollback's lost window (snapshot to kill): the event-log entries that
   * granted or took shards then are gone, so the timeline cannot vouch for that span.
   */
  inLostWindow(t: number): boolean {
    return this.rollbacks.some(
      (r) => t >= r.snapshotAt - this.slack && t <= r.killedAt + this.slack,
    );
  }

  /**
   * Whether `h`, started after a rollback's kill while the timeline shows its member without the
   * shard, handles an entry its member read before the kill under a grant Redis then lost (see
   * {@link checkInvariants}): the entry existed before the kill (its id's millisecond part is
   * Redis' time), `h` was not acked by its member (after the restart the fence refuses it: a
   * member the restored fence named would have got its acks through), and the member's previous
   * handling of the shard started in the rollback's window, with no grant in the timeline (the
   * grant's entry was lost), or is such a handling itself — the tail of a batch read in the
   * window, whose reads and acks stopped at the kill.
   */
  readBeforeRollback(h: HandledRecord): boolean {
    if (this.acks === null || this.ackedItself(h)) return false;
    const list = this.handledBy.get(`${h.m}|${h.s}`) ?? [];
    const at = list.indexOf(h);
    const ms = Number(h.id.split('-')[0]);
    return this.rollbacks.some((r) => {
      if (h.t0 <= r.killedAt + this.slack || ms > r.killedAt) return false;
      // bounded: a tail is at most what one reader holds (a read batch, a key-ordered buffer),
      // handled soon after the kill; a member still at it later is a zombie, not a tail
      if (h.t0 > r.killedAt + READ_TAIL_MAX_MS) return false;
      for (let i = at - 1; i >= 0 && at - i <= READ_TAIL_MAX_HANDLINGS; i--) {
        const prev = list[i] as HandledRecord;
        if (prev.t0 < r.snapshotAt - this.slack) return false;
        if (prev.t0 <= r.killedAt + this.slack)
          return this.covering(prev.m, prev.s, prev.t0) === undefined;
        const prevMs = Number(prev.id.split('-')[0]);
        if (this.ackedItself(prev) || prevMs > r.killedAt) return false;
        if (this.covering(prev.m, prev.s, prev.t0) !== undefined) return false;
      }
      return false;
    });
  }

  /**
   * Whether an ack of `h` by its member got through: an ack record of the member listing the id,
   * sent after `h` ended, before the member's next handling of the entry (a later ack is that
   * handling's) and before the timeline grants the member the shard again after `h` (an ack under
   * that later grant is the grant's: an exactly-once member acks an entry whose effect it finds
   * already applied without handling it again).
   */
  ackedItself(h: HandledRecord): boolean {
    const next = (this.handlingsOf.get(msgKey(h.s, h.id)) ?? []).find(
      (o) => o.m === h.m && o.t0 > h.t0,
    );
    const regranted = (this.ownershipBy.get(`${h.m}|${h.s}`) ?? []).find((i) => i.from > h.t1);
    return (this.ackRecordsBy.get(`${h.m}|${h.s}`) ?? []).some((a) => {
      const sent = a.t0 ?? a.t;
      return (
        a.a.includes(h.id) &&
        a.t >= h.t1 &&
        (next === undefined || sent < next.t0) &&
        (regranted === undefined || sent < regranted.from + this.slack)
      );
    });
  }

  /** An ack of a message whose delivery Redis may have lost, sent before its last handling ended. */
  ackOfLostDelivery(key: string, a: AckRecord): boolean {
    if (!this.deliveryLost.has(key)) return false;
    const list = this.handlingsOf.get(key);
    const last = list?.[list.length - 1];
    return last !== undefined && a.t < last.t1;
  }

  /**
   * Whether `h` repeats `prev` because a rollback lost `prev`'s delivery (or its count): `prev`
   * started in the lost window, or is the tail of a batch its member read there under a grant
   * Redis lost ({@link CheckContext.readBeforeRollback}: handled after the kill, the delivery
   * before it) and `h` is the restored owner's, or its member's ack of it was lost.
   */
  repeatedByRollback(prev: HandledRecord, h: HandledRecord): boolean {
    if (this.deliveryLost.has(msgKey(h.s, h.id))) return true;
    // (the repeat is the restored owner's: the timeline names its member at `h`'s start)
    if (this.readBeforeRollback(prev) && this.covering(h.m, h.s, h.t0) !== undefined) return true;
    return this.rollbacks.some(
      (r) =>
        h.t0 >= r.killedAt - this.slack &&
        ((prev.t0 >= r.snapshotAt - this.slack && prev.t0 <= r.killedAt + this.slack) ||
          (h.m === prev.m && this.ackSentInWindow(prev, r))),
    );
  }

  /**
   * Whether `h`'s member sent its ack of `h` in `r`'s lost window: Redis forgot that ack, so the
   * entry came back pending to the same member at the count it had, and a key-ordered reader,
   * which counts no delivery for an entry it acked, hands it again at that count.
   */
  ackSentInWindow(h: HandledRecord, r: RedisRollback): boolean {
    return (this.ackRecordsBy.get(`${h.m}|${h.s}`) ?? []).some((a) => {
      const sent = a.t0 ?? a.t;
      return (
        a.a.includes(h.id) &&
        a.t >= h.t1 &&
        sent >= r.snapshotAt - this.slack &&
        sent <= r.killedAt + this.slack
      );
    });
  }

  /**
   * When the message counts as acked (see {@link checkInvariants}): an ack Redis cannot have
   * lost; `undefined`: not known acked.
   */
  ackTime(key: string): number | undefined {
    if (this.acks) return this.durableAckedAt.get(key);
    if (this.pendingIds.has(key)) return undefined;
    const list = this.handlingsOf.get(key);
    return list ? (list[list.length - 1] as HandledRecord).t1 : undefined;
  }

  /**
   * The latest end of a handling by the ack's member, on its shard, of an id it acks, before the
   * ack was observed: the ack cannot have been sent earlier. `-Infinity` when none is known.
   */
  latestHandlingEnd(a: AckRecord): number {
    let latest = Number.NEGATIVE_INFINITY;
    for (const id of a.a) {
      for (const h of this.handlingsOf.get(msgKey(a.s, id)) ?? []) {
        if (h.m === a.m && h.t1 <= a.t && h.t1 > latest) latest = h.t1;
      }
    }
    return latest;
  }

  /**
   * Whether a message with no ack record can have been acked by a member that was killed before
   * it could record the ack: not pending at the end, the member of its last handling was killed
   * within the crash window after that handling ended, and the handling ended after that member
   * sent its last recorded ack of the shard before the kill. A member's acks of a shard go out
   * one batch at a time, each with every id handled since the batch before, so the batch whose
   * record died with it holds only such ids; an id handled before that send was in a recorded
   * batch or in none.
   */
  ackLostInCrash(key: string): boolean {
    if (this.input.pending === null || this.pendingIds.has(key)) return false;
    const list = this.handlingsOf.get(key);
    const last = list?.[list.length - 1];
    if (last === undefined) return false;
    const batches = this.ackBatchesBy.get(`${last.m}|${last.s}`) ?? [];
    return (this.crashesOf.get(last.m) ?? []).some((at) => {
      if (at < last.t1 || at - last.t1 > this.crashWindow) return false;
      const lastSent = batches.reduce((m, b) => (b.t <= at && b.sent > m ? b.sent : m), -Infinity);
      return last.t1 > lastSent;
    });
  }

  /** Whether the handling's ack took effect. */
  committed(h: HandledRecord): boolean {
    const key = msgKey(h.s, h.id);
    if (this.acks) {
      const acks = this.acksBy.get(`${h.m}|${h.s}`)?.get(h.id);
      return acks !== undefined && acks.some((a) => this.ackCommits(h, a.t, a.sent));
    }
    if (this.pendingIds.has(key)) return false;
    const list = this.handlingsOf.get(key) as HandledRecord[];
    return list[list.length - 1] === h;
  }
}

function checkNoLoss(ctx: CheckContext): InvariantResult {
  const log = new ViolationLog('noLoss', 'no loss: handled and acked', ctx.maxExamples);
  if (ctx.lostByRedis.size > 0) log.note('lostByRedis', ctx.lostByRedis.size);
  for (const [key, p] of ctx.produced) {
    const handled = ctx.handlingsOf.has(key);
    if (ctx.deadLettered.has(key)) log.note('deadLettered');
    if (!handled && !ctx.deadLettered.has(key)) {
      log.add('unhandled', () => `${p.key}#${p.seq} (shard ${p.shard}, ${p.id}) was never handled`);
    }
    if (ctx.acks && !ctx.ackedAt.has(key)) {
      if (ctx.ackLostInCrash(key)) log.note('ackRecordLostInCrash');
      else {
        log.add(
          'unacked',
          () => `${p.key}#${p.seq} (shard ${p.shard}, ${p.id}) is in no ack record`,
        );
      }
    }
    const consumer = ctx.pendingIds.get(key);
    if (consumer !== undefined) {
      log.add(
        'pending-at-end',
        () => `${p.key}#${p.seq} (shard ${p.shard}, ${p.id}) still pending for ${consumer}`,
      );
    }
  }
  for (const [key, list] of ctx.handlingsOf) {
    if (!ctx.produced.has(key) && !ctx.lostByRedis.has(key)) {
      const h = list[0] as HandledRecord;
      log.add(
        'unknown-handled',
        () => `shard ${h.s} entry ${h.id} (${h.k}#${h.q}) was handled but never produced`,
      );
    }
  }
  for (const [key, consumer] of ctx.pendingIds) {
    if (!ctx.produced.has(key) && !ctx.lostByRedis.has(key))
      log.add('unknown-pending', () => `${key} pending for ${consumer} was never produced`);
  }
  const basis = [
    'handled records',
    ctx.input.deadLettered ? 'dead-letter stream' : null,
    ctx.acks ? 'ack records' : null,
    ctx.input.pending ? 'final pending entries' : null,
  ]
    .filter((s) => s !== null)
    .join(' + ');
  return log.result(
    ctx.produced.size,
    ctx.acks || ctx.input.pending ? basis : `${basis} (acks NOT checked)`,
  );
}

function checkPerKeyOrder(ctx: CheckContext): InvariantResult {
  const log = new ViolationLog('perKeyOrder', 'per-key order', ctx.maxExamples);
  const byKey = new Map<string, HandledRecord[]>();
  for (const h of ctx.handled) push(byKey, h.k, h);
  // acked messages per key, by ack time, with their place in the key's write order
  const ackedByKey = new Map<string, Array<{ at: number; place: WritePlace }>>();
  for (const [key, p] of ctx.produced) {
    const at = ctx.ackTime(key);
    if (at !== undefined) push(ackedByKey, p.key, { at, place: placeOf(p) });
  }
  for (const [key, list] of byKey) {
    const acked = (ackedByKey.get(key) ?? []).sort((a, b) => a.at - b.at);
    let next = 0;
    let maxAcked: WritePlace | null = null;
    let maxFirst: WritePlace | null = null;
    const seen = new Set<string>();
    for (const h of list) {
      const produced = ctx.produced.get(msgKey(h.s, h.id));
      if (produced !== undefined && produced.seq !== h.q) {
        log.add(
          'seq-mismatch',
          () => `${h.k} entry ${h.id}: handled with seq ${h.q}, produced with ${produced.seq}`,
        );
      }
      while (next < acked.length && (acked[next] as { at: number }).at <= h.t0) {
        const place = (acked[next] as { place: WritePlace }).place;
        if (maxAcked === null || comparePlaces(place, maxAcked) > 0) maxAcked = place;
        next++;
      }
      // (an entry Redis lost keeps its place; an unknown one, by its number alone)
      const round = ctx.roundOf.get(msgKey(h.s, h.id)) ?? maxAcked?.round ?? 0;
      const place: WritePlace = { round, seq: h.q };
      const behind = maxAcked !== null && comparePlaces(place, maxAcked) < 0;
      if (behind && ctx.repeatedAfterLostAck(h)) {
        log.note('redisRollback');
      } else if (behind) {
        const past = maxAcked?.seq;
        log.add(
          'went-back-past-acked',
          () => `${h.k}#${h.q} handled by ${h.m} at ${fmt(h.t0)} after #${past} was already acked`,
        );
      }
      const entry = msgKey(h.s, h.id);
      if (!seen.has(entry)) {
        if (maxFirst !== null && comparePlaces(place, maxFirst) < 0) {
          const after = maxFirst.seq;
          log.add(
            'first-handling-out-of-order',
            () => `${h.k}#${h.q} first handled by ${h.m} at ${fmt(h.t0)}, after #${after}`,
          );
        }
        seen.add(entry);
        if (maxFirst === null || comparePlaces(place, maxFirst) > 0) maxFirst = place;
      }
    }
  }
  if (ctx.acks) checkShardChanges(ctx, log);
  const basis = ctx.acks
    ? 'handling start times + ack records'
    : 'handling start times (acked ≈ end of last handling)';
  return log.result(byKey.size, basis);
}

/**
 * A key's entries on more than one shard (a reshard moved the key; a message published again
 * went to the new layout): each entry's first handling must not start before the ack of every
 * entry of the key written before it on another shard was sent (the reshard drains the old shard
 * first). Entries in `(round, seq)` order; copies in the same place (written twice, no round
 * given) do not wait for each other.
 */
function checkShardChanges(ctx: CheckContext, log: ViolationLog): void {
  const copiesOf = new Map<string, ProducedMessage[]>();
  for (const p of ctx.produced.values()) push(copiesOf, p.key, p);
  for (const copies of copiesOf.values()) {
    copies.sort((a, b) => comparePlaces(placeOf(a), placeOf(b)));
    // per shard, of the entries written earlier: the one whose ack was sent last (entries
    // without an ack record are skipped), and whether the last of them has an ack record
    const latest = new Map<
      number,
      { acked?: { copy: ProducedMessage; sent: number }; lastHasAck: boolean }
    >();
    let pending: ProducedMessage[] = [];
    let previous: ProducedMessage | undefined;
    const settle = (): void => {
      for (const copy of pending) {
        const sent = ctx.ackSentAt.get(msgKey(copy.shard, copy.id));
        const known = latest.get(copy.shard);
        const acked =
          sent !== undefined && (known?.acked === undefined || sent > known.acked.sent)
            ? { copy, sent }
            : known?.acked;
        latest.set(copy.shard, { ...(acked ? { acked } : {}), lastHasAck: sent !== undefined });
      }
      pending = [];
    };
    for (const copy of copies) {
      const last = pending[pending.length - 1];
      if (last !== undefined && comparePlaces(placeOf(last), placeOf(copy)) !== 0) settle();
      pending.push(copy);
      if (previous !== undefined && previous.shard !== copy.shard) {
        log.note('shardChanges');
        // (once per move: the entry the key left behind has no ack record)
        if (latest.get(previous.shard)?.lastHasAck === false) log.note('shardChangesUnverified');
      }
      previous = copy;
      const first = ctx.handlingsOf.get(msgKey(copy.shard, copy.id))?.[0];
      if (first === undefined) continue;
      for (const [shard, earlier] of latest) {
        if (shard === copy.shard || earlier.acked === undefined) continue;
        const { copy: before, sent: acked } = earlier.acked;
        if (first.t0 < acked - ctx.slack) {
          log.add(
            'handled-before-earlier-acked',
            () =>
              `${copy.key}#${copy.seq} (shard ${copy.shard}) first handled by ${first.m} at ${fmt(first.t0)}, before #${before.seq} (shard ${before.shard}) was acked at ${fmt(acked)}`,
          );
        }
      }
    }
  }
}

function checkSingleOwner(ctx: CheckContext): InvariantResult {
  const log = new ViolationLog('singleOwner', 'single owner per shard', ctx.maxExamples);
  const byShard = new Map<number, HandledRecord[]>();
  const byMemberShard = new Map<string, HandledRecord[]>();
  // (ordering 'key': one member handles different keys of a shard at once, one key at a time —
  // checked per key then; different members still never overlap on a shard)
  const perKey = ctx.ordering === 'key';
  for (const h of ctx.handled) {
    if (ctx.committed(h)) push(byShard, h.s, h);
    push(byMemberShard, perKey ? `${h.m}|${h.s}|${h.k}` : `${h.m}|${h.s}`, h);
  }
  let checked = 0;
  for (const [shard, list] of byShard) {
    checked += list.length;
    let last: HandledRecord | undefined; // the committed handling ending latest so far
    let previousMember: string | undefined;
    for (const h of list) {
      if (last !== undefined && last.m !== h.m && h.t0 < last.t1) {
        const other = last;
        if (ctx.overlapUndoneByRollback(other, h)) log.note('redisRollback');
        else
          log.add(
            'two-members-at-once',
            () =>
              `shard ${shard}: ${h.m} handled ${h.k}#${h.q} [${fmt(h.t0)}, ${fmt(h.t1)}] while ${other.m} handled ${other.k}#${other.q} [${fmt(other.t0)}, ${fmt(other.t1)}]`,
          );
      }
      if (previousMember !== undefined && previousMember !== h.m && last !== undefined) {
        ctx.handOffs++;
        const gap = h.t0 - last.t1;
        if (ctx.minHandOffGap === null || gap < ctx.minHandOffGap) ctx.minHandOffGap = gap;
      }
      previousMember = h.m;
      if (last === undefined || h.t1 > last.t1) last = h;
    }
  }
  for (const list of byMemberShard.values()) {
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1] as HandledRecord;
      const h = list[i] as HandledRecord;
      if (h.t0 < prev.t1) {
        log.add(
          perKey ? 'key-concurrent-in-member' : 'concurrent-in-member',
          () =>
            `${h.m} shard ${h.s}: ${h.k}#${h.q} started at ${fmt(h.t0)} before ${prev.k}#${prev.q} ended at ${fmt(prev.t1)}`,
        );
      }
    }
  }
  const basis = ctx.acks
    ? 'committed = acked by the same member (ack records)'
    : 'committed = last handling of a message that is not pending';
  return log.result(checked, basis);
}

function checkZombieSafety(ctx: CheckContext): InvariantResult {
  const log = new ViolationLog('zombieSafety', 'zombie safety', ctx.maxExamples);
  const ownership = ctx.input.ownership;
  if (ownership === null) return log.result(0, 'no ownership timeline: not checked');
  const intervals = ctx.ownershipBy;
  const slack = ctx.slack;
  const covering = (member: string, shard: number, t: number): OwnershipInterval | undefined =>
    ctx.covering(member, shard, t);
  const describeOwnership = (member: string, shard: number, t: number): string => {
    const list = intervals.get(`${member}|${shard}`) ?? [];
    const before = list.filter((i) => i.from <= t).pop();
    if (!before) return 'it had never been granted the shard by then';
    return `its ownership ended at ${fmt(before.to ?? 0)} (${before.endedBy ?? '?'}), ${Math.round(t - (before.to ?? 0))} ms earlier`;
  };
  for (const h of ctx.handled) {
    const owned = covering(h.m, h.s, h.t0);
    if (!owned && ctx.inLostWindow(h.t0)) {
      log.note('unverifiableLostEvents');
    } else if (!owned && ctx.readBeforeRollback(h)) {
      log.note('readBeforeRollback');
    } else if (!owned) {
      log.add(
        'handled-without-ownership',
        () =>
          `${h.m} started ${h.k}#${h.q} on shard ${h.s} at ${fmt(h.t0)}: ${describeOwnership(h.m, h.s, h.t0)}`,
      );
    } else if (owned.to !== null && h.t1 > owned.to + slack) {
      log.note('zombieInFlight');
    }
  }
  for (const a of ctx.acks ?? []) {
    if (covering(a.m, a.s, a.t)) continue;
    // Observed after the loss. It was sent at `t0` when the record says so; otherwise only
    // bounds are known: after the member's handlings of the acked ids ended, before `t`.
    const sentFrom = a.t0 ?? ctx.latestHandlingEnd(a);
    const sentTo = a.t0 ?? a.t;
    if (ctx.inLostWindow(sentTo)) {
      // the grant it relied on may be one of the event-log entries Redis lost
      log.note('unverifiableLostEvents');
      continue;
    }
    const ownedThen = (intervals.get(`${a.m}|${a.s}`) ?? []).some(
      (i) => i.from - slack <= sentTo && (i.to === null || sentFrom <= i.to + slack),
    );
    if (ownedThen) {
      // it may have been sent (and Redis, whose fence still named the member, accepted it)
      // before the loss and only answered after it: an event-loop stall or a freeze in between
      log.note('ackObservedAfterLoss');
      continue;
    }
    log.add(
      'acked-without-ownership',
      () =>
        `${a.m} acked ${a.a.length} entries of shard ${a.s} sent at ${a.t0 !== undefined ? fmt(a.t0) : `${fmt(sentFrom)} or later`}: ${describeOwnership(a.m, a.s, sentFrom)}`,
    );
  }
  const byShard = new Map<number, OwnershipInterval[]>();
  for (const i of ownership) if (i.stream === ctx.input.stream) push(byShard, i.shard, i);
  for (const [shard, list] of byShard) {
    list.sort((a, b) => a.from - b.from);
    const endOf = (i: OwnershipInterval): number => i.to ?? Number.POSITIVE_INFINITY;
    let last: OwnershipInterval | undefined; // the interval ending latest so far
    for (const i of list) {
      if (last !== undefined && last.memberId !== i.memberId && i.from < endOf(last)) {
        const other = last;
        log.add(
          'coordinator-double-grant',
          () =>
            `shard ${shard} granted to ${i.memberId} at ${fmt(i.from)} while ${other.memberId} held it`,
        );
      }
      if (last === undefined || endOf(i) > endOf(last)) last = i;
    }
  }
  const basis = `ownership timeline (${ownership.length} intervals)${ctx.acks ? ' + ack records' : ' (acks NOT checked: no ack records)'}`;
  return log.result(ctx.handled.length + (ctx.acks?.length ?? 0), basis);
}

function checkDuplicates(ctx: CheckContext): InvariantResult {
  const log = new ViolationLog('duplicates', 'duplicates explained', ctx.maxExamples);
  let extra = 0;
  for (const [key, list] of ctx.handlingsOf) {
    if (list.length < 2) continue;
    const ackedAt = ctx.acks ? ctx.durableAckedAt.get(key) : undefined;
    for (let i = 1; i < list.length; i++) {
      extra++;
      const prev = list[i - 1] as HandledRecord;
      const h = list[i] as HandledRecord;
      if (ackedAt !== undefined && h.t0 >= ackedAt) {
        log.add(
          'after-ack',
          () =>
            `${h.k}#${h.q} (${key}) handled again by ${h.m} at ${fmt(h.t0)} after its ack at ${fmt(ackedAt)}`,
        );
      } else if (h.d <= prev.d && ctx.repeatedByRollback(prev, h)) {
        log.note('redisRollback');
      } else if (h.d <= prev.d) {
        log.add(
          'same-delivery',
          () =>
            `${h.k}#${h.q} (${key}) handled by ${prev.m} and ${h.m} with delivery counts ${prev.d} then ${h.d}`,
        );
      } else {
        log.note('redelivery');
      }
    }
  }
  log.note('duplicates', extra);
  return log.result(
    ctx.handlingsOf.size,
    ctx.acks ? 'handled records + ack records' : 'handled records',
  );
}

function byStart(a: HandledRecord, b: HandledRecord): number {
  return a.t0 - b.t0 || a.t1 - b.t1;
}

function msgKey(shard: number, id: string): string {
  return `${shard}/${id}`;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function getOrCreate<K, V>(map: Map<K, V>, key: K, create: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = create();
    map.set(key, value);
  }
  return value;
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

/** A wall-clock time as `HH:MM:SS.mmm` (UTC). */
function fmt(t: number): string {
  return new Date(t).toISOString().slice(11, 23);
}

/** Where a message's copy is in its key's write order: publish attempt, then sequence number. */
interface WritePlace {
  readonly round: number;
  readonly seq: number;
}

function placeOf(p: ProducedMessage): WritePlace {
  return { round: p.round ?? 0, seq: p.seq };
}

function comparePlaces(a: WritePlace, b: WritePlace): number {
  return a.round - b.round || a.seq - b.seq;
}
