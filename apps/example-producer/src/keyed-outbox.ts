/** The payload the example producer writes (the example worker's `OrderEvent`). */
export interface OrderPayload {
  /** Per-key sequence number: 0, 1, 2, … for each key. */
  readonly seq: number;
  readonly amount: number;
}

/** One message waiting to be published. */
export interface OutgoingMessage {
  readonly key: string;
  readonly payload: OrderPayload;
}

/**
 * The producer's keyed messages in publish order: new messages get their key's next sequence
 * number, unwritten ones stay queued (oldest first) and are retried before anything newer, so
 * per key the shard receives `seq` 0, 1, 2, … in order (a message whose write was not confirmed
 * may be written twice — at-least-once — but never after a later one of its key was confirmed
 * without it).
 */
export class KeyedOutbox {
  private readonly nextSeq = new Map<string, number>();
  private pending: OutgoingMessage[] = [];
  private generatedCount = 0;
  private confirmedCount = 0;

  /**
   * @param keyCount distinct keys, `key-0` … `key-<keyCount-1>`
   * @param limit most messages ever generated (0: no limit)
   * @param pick random source in [0, 1) choosing each message's key
   */
  constructor(
    private readonly keyCount: number,
    private readonly limit = 0,
    private readonly pick: () => number = Math.random,
  ) {}

  /** Messages generated so far. */
  get generated(): number {
    return this.generatedCount;
  }

  /** Messages whose write was confirmed. */
  get confirmed(): number {
    return this.confirmedCount;
  }

  /** Messages waiting (not yet confirmed). */
  get waiting(): number {
    return this.pending.length;
  }

  /** True once the limit was generated and everything was confirmed. */
  get done(): boolean {
    return this.limit > 0 && this.generatedCount >= this.limit && this.pending.length === 0;
  }

  /** Adds up to `count` new messages (fewer once the limit is reached); returns how many. */
  generate(count: number): number {
    let added = 0;
    while (added < count && (this.limit === 0 || this.generatedCount < this.limit)) {
      const key = `key-${Math.min(this.keyCount - 1, Math.floor(this.pick() * this.keyCount))}`;
      const seq = this.nextSeq.get(key) ?? 0;
      this.nextSeq.set(key, seq + 1);
      this.pending.push({ key, payload: { seq, amount: Math.round(this.pick() * 10_000) / 100 } });
      this.generatedCount++;
      added++;
    }
    return added;
  }

  /** The oldest `size` waiting messages (they stay queued until {@link settle}). */
  peek(size: number): OutgoingMessage[] {
    return this.pending.slice(0, size);
  }

  /**
   * Records the outcome of publishing `batch` (a {@link peek} result): `written[i]` says whether
   * message `i` was confirmed. Confirmed ones leave the queue, the rest stay in front, in order.
   */
  settle(batch: readonly OutgoingMessage[], written: readonly boolean[]): void {
    const done = new Set<OutgoingMessage>();
    batch.forEach((message, i) => {
      if (written[i] === true) done.add(message);
    });
    if (done.size === 0) return;
    this.pending = this.pending.filter((message) => !done.has(message));
    this.confirmedCount += done.size;
  }

  /** Messages generated per key (`key → next seq`): after {@link done}, every one was written. */
  sentPerKey(): Record<string, number> {
    return Object.fromEntries([...this.nextSeq].sort(([a], [b]) => (a < b ? -1 : 1)));
  }
}
