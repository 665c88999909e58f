/**
 * What the invariant checker reads. Times are wall-clock milliseconds (`Date.now()` scale) with
 * sub-millisecond precision where the source has it; every process runs on one machine, so the
 * clocks are comparable. Members stamp with `apps/example-worker/src/record-clock.ts`, which stays
 * on the wall clock when it is stepped mid-run, as the coordinator's event times do.
 */

/** One message the test produced (the producer knows its key, sequence number, shard and id). */
export interface ProducedMessage {
  readonly key: string;
  /** Per-key sequence number, 0, 1, 2, … in publish order. */
  readonly seq: number;
  readonly shard: number;
  /** The Redis entry id on its shard. */
  readonly id: string;
  /**
   * The producer's publish attempt that wrote this copy (default 0). A message whose first call
   * got no answer may be written again, in a later attempt: every copy of a later attempt was
   * written after every copy of an earlier one, so a key's entries were written in
   * `(round, seq)` order.
   */
  readonly round?: number;
}

/**
 * One successful handler call, as the example worker appends it to `RECORD_FILE`
 * (`apps/example-worker/src/handled-recorder.ts`): written synchronously after the handler's
 * work and before the handler resolves, so before any ack of that delivery.
 */
export interface HandledRecord {
  /** Member id. */
  readonly m: string;
  /** Stream. */
  readonly st: string;
  /** Shard. */
  readonly s: number;
  /** Routing key. */
  readonly k: string;
  /** Entry id. */
  readonly id: string;
  /** Per-key sequence number from the payload (-1 when it had none). */
  readonly q: number;
  /** Redis delivery count of this delivery. */
  readonly d: number;
  /** Handler start and end. */
  readonly t0: number;
  readonly t1: number;
}

/**
 * One acknowledgement batch that Redis accepted (the fenced ack script passed), as the worker
 * appends it to `RECORD_FILE` through the reader's `acked` hook: `{"a": [ids], "m", "s", "t"}`.
 */
export interface AckRecord {
  /** Entry ids acknowledged in this batch. */
  readonly a: readonly string[];
  /** Member id. */
  readonly m: string;
  /** Shard. */
  readonly s: number;
  /** When the ack was known to have succeeded (after Redis answered). */
  readonly t: number;
  /** When the ack was sent, if the record carries it (then used for zombie safety). */
  readonly t0?: number;
  /** Stream, if the record carries it. */
  readonly st?: string;
}

/**
 * A span during which the coordinator let `memberId` own `shard` (from the group's event log:
 * `SHARDS_ASSIGNED` opens it; `SHARDS_RELEASED` or the member's removal — `MEMBER_LEFT`,
 * `MEMBER_EXPIRED`, `MEMBER_FENCED`, `MEMBER_REMOVED`, `MEMBER_REPLACED` — closes it).
 */
export interface OwnershipInterval {
  readonly memberId: string;
  readonly stream: string;
  readonly shard: number;
  readonly from: number;
  /** `null`: still owned at the end of the log. */
  readonly to: number | null;
  /** The event type that closed it (`null` while open). */
  readonly endedBy: string | null;
}

/** The consumer group's pending entries (PEL) per shard at the end of the run. */
export interface PendingSnapshot {
  /** shard → ids still pending (unacknowledged), with their consumer. */
  readonly byShard: ReadonlyMap<
    number,
    ReadonlyArray<{ readonly id: string; readonly consumer: string }>
  >;
}

/** One entry found in the stream's dead-letter stream. */
export interface DeadLetteredEntry {
  readonly shard: number;
  /** The original entry id on the shard. */
  readonly id: string;
  readonly reason: string;
  readonly error: string;
  readonly deliveryCount: number;
  readonly memberId: string;
}

/** Everything {@link checkInvariants} looks at. */
export interface InvariantInput {
  /** The stream checked (records of other streams are ignored). */
  readonly stream: string;
  readonly produced: readonly ProducedMessage[];
  readonly handled: readonly HandledRecord[];
  /**
   * Ack records, or `null` when the workers do not write them: "acked" then falls back to the
   * final pending snapshot, and zombie safety to handling start times.
   */
  readonly acks: readonly AckRecord[] | null;
  /** Ownership timeline, or `null` when unknown (zombie safety is then not checked). */
  readonly ownership: readonly OwnershipInterval[] | null;
  /** Final pending entries, or `null` when not read. */
  readonly pending: PendingSnapshot | null;
  /** Entries found in the dead-letter stream (they count as handled). Default none. */
  readonly deadLettered?: readonly DeadLetteredEntry[];
  /**
   * When member processes were killed (SIGKILL), if the run killed any. An ack Redis applied
   * just before the kill has no ack record (the process died before it could write one): see
   * {@link InvariantOptions.crashWindowMs}.
   */
  readonly crashes?: readonly MemberCrash[];
  /**
   * Times Redis lost its last writes (crashed and came back from an older persisted state), with
   * the messages whose `XADD` it lost: acknowledged to the producer, gone from Redis before
   * anyone could be sure to read them. Those are reported as `lostByRedis` and left out of every
   * invariant (nobody can deliver them); a handling of one before the loss is not "unknown".
   */
  readonly redisRollbacks?: readonly RedisRollback[];
  /** Messages of {@link InvariantInput.redisRollbacks} lost by Redis (shard and entry id). */
  readonly lostByRedis?: ReadonlyArray<{ readonly shard: number; readonly id: string }>;
  /**
   * Messages Redis kept whose delivery to the group it may have lost (above the group's surviving
   * last-delivered-id): a member may ack such a delivery after the restart (acknowledging
   * nothing) and get the message again as new. For these only an ack after the message's last
   * handling counts as its ack.
   */
  readonly deliveryLostByRedis?: ReadonlyArray<{ readonly shard: number; readonly id: string }>;
}

/**
 * One Redis restart that lost writes: every write Redis answered after `snapshotAt` and before
 * `killedAt` may be gone (deliveries, acks, fences, group commits, messages).
 */
export interface RedisRollback {
  /** Wall-clock ms: writes answered before this survived. */
  readonly snapshotAt: number;
  /** Wall-clock ms: Redis was killed (nothing is written after it until the restart). */
  readonly killedAt: number;
}

/** A member process killed by the test (its record file ends there). */
export interface MemberCrash {
  readonly memberId: string;
  /** When the process was known dead (wall-clock ms). */
  readonly at: number;
}

/** Tolerances of {@link checkInvariants}. */
export interface InvariantOptions {
  /**
   * Allowed difference between the coordinator's clock (event times, whole ms from Redis TIME)
   * and the workers' clocks when comparing a handling or an ack with an ownership interval.
   * Default 5 ms. (Overlaps between handlings of different members are compared exactly.)
   */
  readonly clockSlackMs?: number;
  /** Violations listed per invariant (all are counted). Default 20. */
  readonly maxExamples?: number;
  /**
   * A message with no ack record that is not pending at the end counts as acked when the member
   * of its last handling was killed at most this long after that handling ended (Redis applied
   * the ack, the process died before recording it). Default 3000 ms.
   */
  readonly crashWindowMs?: number;
  /**
   * The workers' `ordering` (default `shard`). With `key`, single owner checks that one member
   * handles one key at a time instead of one shard at a time; per-key order is checked alike.
   */
  readonly ordering?: 'shard' | 'key';
}
