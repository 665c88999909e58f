/** The invariants {@link checkInvariants} evaluates. */
export type InvariantName =
  'noLoss' | 'perKeyOrder' | 'singleOwner' | 'zombieSafety' | 'duplicates';

/** The verdict on one invariant. */
export interface InvariantResult {
  readonly name: InvariantName;
  /** A short human title. */
  readonly title: string;
  readonly ok: boolean;
  /** How many items the invariant looked at (messages, keys, handlings, acks). */
  readonly checked: number;
  /** Violations found (all of them, not only the listed examples). */
  readonly violations: number;
  /** Violations by kind, e.g. `{ unacked: 3 }`. */
  readonly byKind: Readonly<Record<string, number>>;
  /** Counted facts that are not violations, e.g. `{ zombieInFlight: 2, redelivery: 40 }`. */
  readonly notes: Readonly<Record<string, number>>;
  /** The first violations, one line each. */
  readonly examples: readonly string[];
  /** Which sources the verdict rests on (ack records, final PEL, ownership timeline, …). */
  readonly basis: string;
}

/** Totals of a run. */
export interface InvariantCounts {
  readonly produced: number;
  readonly handledRecords: number;
  readonly distinctHandled: number;
  readonly ackRecords: number;
  readonly ackedIds: number;
  /** Handlings beyond the first per message. */
  readonly duplicates: number;
  /** Handlings with a delivery count above 1. */
  readonly redeliveredHandlings: number;
  /** Handlings that started while their member owned the shard and ended after it lost it. */
  readonly zombieInFlight: number;
  readonly deadLettered: number;
  /**
   * Dead-lettered messages no handler call ever completed (no handled record): lost to the
   * application. A run without poison messages must have none (a graceful shutdown, a revoke or a
   * fence must never dead-letter).
   */
  readonly deadLetteredUnhandled: number;
  readonly pendingAtEnd: number;
  readonly keys: number;
  readonly shards: number;
  /** Handlings per member id. */
  readonly handledByMember: Readonly<Record<string, number>>;
  /**
   * Smallest time between the end of one member's last committed handling on a shard and the
   * start of another member's next one (the quietest hand-off); `null` when no shard changed
   * hands.
   */
  readonly minHandOffGapMs: number | null;
  /** Shard hand-offs seen in the committed handlings. */
  readonly handOffs: number;
}

/** What {@link checkInvariants} returns. */
export interface InvariantReport {
  /** Every invariant holds. */
  readonly ok: boolean;
  /** Where "acked" came from. */
  readonly ackSource: 'ack-records' | 'pending-snapshot' | 'none';
  readonly results: Readonly<Record<InvariantName, InvariantResult>>;
  readonly counts: InvariantCounts;
}
