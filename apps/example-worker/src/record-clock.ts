/**
 * Time stamps for the record files. The invariant checkers compare them with the coordinator's
 * event times, which are Redis's clock (`TIME`, truncated to the ms: the wall clock of the machine
 * the tests run on), so a stamp must stay on the wall clock even when that clock is stepped while
 * the process runs (an NTP step, a VM resumed from a snapshot).
 * `performance.timeOrigin + performance.now()` does not: the origin is read once at start, and
 * the monotonic clock ignores steps, so after one every later stamp is off by the step.
 *
 * A {@link RecordClock} stamps on the monotonic clock (sub-millisecond, never backwards) plus an
 * offset, and re-anchors the offset to the wall clock only when a sample taken without
 * preemption shows the two apart by more than {@link REANCHOR_MS}: between steps, stamps keep
 * their precision and order, and a small step back is held ({@link HOLD_BACK_MS}).
 */

/** The clocks a stamp is built from (the process's own unless a unit test passes others). */
export interface RecordClocks {
  /** Wall clock, ms since the epoch (`Date.now()`). */
  wall(): number;
  /** Monotonic clock, ms (`performance.now()`). */
  monotonic(): number;
  /** The wall-clock time the monotonic clock's 0 was at (`performance.timeOrigin`). */
  readonly origin: number;
}

/**
 * How far the stamps may drift from `Date.now()` before they follow it: above its 1 ms truncation
 * (plus the sample window), and low enough that a smaller step left as it is, plus the event
 * times' own 1 ms truncation, stays within the checkers' 5 ms clock slack.
 */
export const REANCHOR_MS = 3;

/**
 * A re-anchor backwards by at most this much does not show in {@link RecordClock.now}: its stamps
 * hold still until the clock catches up, so one process's stamps keep the order its handlings ran
 * in (a wall clock slewed or stepped back a few ms would otherwise stamp a handling as starting
 * before the previous one ended). A larger step back is followed at once.
 */
export const HOLD_BACK_MS = 20;

/** The longest a wall-clock sample may take to be trusted (its monotonic readings' distance). */
const SAMPLE_WINDOW_MS = 0.5;

/**
 * The wall clock minus the monotonic clock, read between two monotonic readings, or `undefined`
 * when the process was preempted in between (common on a loaded machine, and as long as any step
 * one looks for): such a sample says nothing.
 */
export function wallMinusMonotonic(
  clocks: Pick<RecordClocks, 'wall' | 'monotonic'>,
): number | undefined {
  const before = clocks.monotonic();
  const wall = clocks.wall();
  const after = clocks.monotonic();
  return after - before <= SAMPLE_WINDOW_MS ? wall - before : undefined;
}

/** Wall-clock stamps for one process. */
export class RecordClock {
  private offset = 0;
  private last = Number.NEGATIVE_INFINITY;

  constructor(private readonly clocks: RecordClocks) {}

  /** Wall-clock ms now, with sub-ms precision; never behind an earlier stamp by a small step. */
  now(): number {
    const stamp = this.of(this.clocks.monotonic());
    if (stamp < this.last && this.last - stamp <= HOLD_BACK_MS) return this.last;
    this.last = stamp;
    return stamp;
  }

  /** The wall-clock time of a monotonic reading taken in this process (`performance.now()`). */
  of(monotonicMs: number): number {
    const sampled = wallMinusMonotonic(this.clocks);
    if (sampled !== undefined) {
      const drift = sampled - (this.clocks.origin + this.offset);
      if (Math.abs(drift) > REANCHOR_MS) this.offset += drift;
    }
    return this.clocks.origin + monotonicMs + this.offset;
  }
}

const processClock = new RecordClock({
  wall: () => Date.now(),
  monotonic: () => performance.now(),
  origin: performance.timeOrigin,
});

/** Wall-clock ms now, with sub-ms precision, following steps of the wall clock. */
export function preciseNow(): number {
  return processClock.now();
}

/** The wall-clock time of a `performance.now()` reading taken in this process. */
export function wallClockOf(monotonicMs: number): number {
  return processClock.of(monotonicMs);
}
