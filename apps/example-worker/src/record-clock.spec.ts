import { describe, expect, it } from 'vitest';
import { preciseNow, RecordClock, type RecordClocks } from './record-clock.js';

/**
 * Clocks a test moves by hand: `step` moves the wall clock only, as an NTP step does;
 * `perRead` advances the monotonic clock at every read (a process preempted between reads).
 */
function handClocks(origin: number): RecordClocks & {
  advance(ms: number): void;
  step(ms: number): void;
  perRead: number;
} {
  let monotonic = 0;
  let offset = 0;
  return {
    origin,
    perRead: 0,
    monotonic() {
      const now = monotonic;
      monotonic += this.perRead;
      return now;
    },
    wall: () => Math.floor(origin + monotonic + offset),
    advance(ms) {
      monotonic += ms;
    },
    step(ms) {
      offset += ms;
    },
  };
}

describe('record clock', () => {
  it('keeps sub-millisecond precision while the wall clock is not stepped', () => {
    const clocks = handClocks(1_000_000.25);
    const clock = new RecordClock(clocks);
    clocks.advance(10.5);
    expect(clock.now()).toBe(1_000_010.75);
    expect(clock.of(4.125)).toBe(1_000_004.375);
  });

  it('follows the wall clock after it was stepped while the process ran', () => {
    const clocks = handClocks(1_000_000);
    const clock = new RecordClock(clocks);
    clocks.advance(100);
    clocks.step(30_000); // e.g. a VM resumed from a snapshot, its clock set right
    clocks.advance(5.5);
    // (re-anchored on Date.now(), which truncates to the ms: exact to within 1 ms)
    const now = clock.now();
    expect(Math.abs(now - 1_030_105.5)).toBeLessThanOrEqual(1);
    // a reading taken 5.5 ms before, on the monotonic clock, lands 5.5 ms before now
    expect(clock.of(100)).toBe(now - 5.5);
  });

  it('follows a backward step too', () => {
    const clocks = handClocks(1_000_000);
    const clock = new RecordClock(clocks);
    clocks.advance(50);
    clocks.step(-2_000);
    expect(Math.abs(clock.now() - 998_050)).toBeLessThanOrEqual(1);
  });

  it('never goes backwards around a small step (absorbed, not flapping)', () => {
    const clocks = handClocks(1_000_000.5);
    const clock = new RecordClock(clocks);
    clocks.step(2.5); // below the re-anchor threshold: within the checkers' slack
    let last = -Infinity;
    for (let i = 0; i < 1000; i++) {
      clocks.advance(0.37);
      const t = clock.now();
      expect(t).toBeGreaterThan(last);
      last = t;
    }
  });

  it('holds still through a small re-anchor backwards, so one process never stamps out of order', () => {
    const clocks = handClocks(1_000_000);
    const clock = new RecordClock(clocks);
    clocks.advance(10);
    const before = clock.now();
    // the wall clock fell 3.5 ms behind (slewed, or stepped back): past the re-anchor threshold
    clocks.step(-3.5);
    clocks.advance(1);
    expect(clock.now()).toBe(before);
    clocks.advance(5); // caught up: 4 ms re-anchored back (the ms truncation), 6 ms passed
    expect(clock.now()).toBeGreaterThan(before);
    // a step back beyond the hold is followed at once (the 'backward step' case above)
    clocks.step(-2_000);
    clocks.advance(1);
    expect(clock.now()).toBeLessThan(before - 1_000);
  });

  it('ignores a sample the process was preempted in', () => {
    const clocks = handClocks(1_000_000);
    const clock = new RecordClock(clocks);
    clocks.advance(10);
    clocks.perRead = 20; // 20 ms pass between any two reads: each wall sample looks 20 ms late
    let last = -Infinity;
    for (let i = 0; i < 10; i++) {
      const t = clock.now();
      expect(t).toBeGreaterThan(last);
      last = t;
    }
    clocks.perRead = 0;
    expect(clock.of(10)).toBe(1_000_010); // no offset was taken from those samples
  });

  it('reads the process clocks by default, on the Date.now() scale', () => {
    const before = Date.now();
    const stamp = preciseNow();
    expect(stamp).toBeGreaterThanOrEqual(before - 5);
    expect(stamp).toBeLessThanOrEqual(Date.now() + 5);
  });
});
