import { wallMinusMonotonic } from '../../../apps/example-worker/src/record-clock.js';

/** A step smaller than this is sampling noise (a 1 ms `Date.now()`). */
const STEP_MS = 20;

/** One step of the wall clock against the monotonic clock. */
export interface ClockStep {
  /** Wall-clock ms (after the step) when it was seen. */
  readonly seenAt: number;
  /** How far the wall clock moved beyond the monotonic clock: positive ahead, negative back. */
  readonly byMs: number;
}

/**
 * Watches this machine's wall clock against its monotonic clock while a chaos run lasts. The
 * checkers compare wall-clock stamps of several processes and Redis's clock, so a step (an NTP
 * step, a VM resumed) in the middle of a run can make handlings look longer or earlier than they
 * were; a failure that coincides with one is read differently (docs/testing.md).
 */
export class ClockStepWatch {
  private readonly steps: ClockStep[] = [];
  private timer: NodeJS.Timeout | undefined;
  private offset: number | undefined;

  constructor(
    private readonly clocks: { wall(): number; monotonic(): number } = {
      wall: () => Date.now(),
      monotonic: () => performance.now(),
    },
    private readonly everyMs = 50,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
    this.timer.unref();
  }

  /** Stops watching; the steps seen, in order. */
  stop(): readonly ClockStep[] {
    clearInterval(this.timer);
    this.sample();
    return [...this.steps];
  }

  /** Takes one sample now (the timer takes one every `everyMs`). */
  sample(): void {
    const offset = wallMinusMonotonic(this.clocks);
    if (offset === undefined) return;
    if (this.offset === undefined) {
      this.offset = offset;
      return;
    }
    // against the last trusted sample (50 ms back): a slow slew never adds up to a step
    const byMs = offset - this.offset;
    this.offset = offset;
    if (Math.abs(byMs) >= STEP_MS) this.steps.push({ seenAt: this.clocks.wall(), byMs });
  }
}

/** One line per step, for the run's summary and failure message. */
export function formatClockSteps(steps: readonly ClockStep[]): string[] {
  return steps.map(
    (s) =>
      `wall clock stepped ${s.byMs > 0 ? '+' : ''}${Math.round(s.byMs)} ms against the monotonic clock (seen at ${new Date(s.seenAt).toISOString().slice(11, 23)})`,
  );
}
