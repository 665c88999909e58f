import { describe, expect, it } from 'vitest';
import { ClockStepWatch, formatClockSteps } from './harness/clock-step-watch.js';

/** Clocks a test moves by hand: each monotonic reading adds `tick` ms. */
function fakeClocks() {
  const c = { mono: 1_000, wall: 1_796_000_000_000, tick: 0.01 };
  return {
    c,
    clocks: {
      monotonic: () => (c.mono += c.tick),
      wall: () => Math.floor(c.wall + c.mono),
    },
  };
}

describe('ClockStepWatch', () => {
  it('reports a step of the wall clock, ahead or back, with when it was seen', () => {
    const { c, clocks } = fakeClocks();
    const watch = new ClockStepWatch(clocks);
    watch.sample();
    c.mono += 50;
    c.wall += 3_000; // stepped ahead
    watch.sample();
    c.mono += 50;
    watch.sample();
    c.mono += 50;
    c.wall -= 400; // stepped back
    watch.sample();
    const steps = watch.stop();
    expect(steps.map((s) => Math.round(s.byMs))).toEqual([3_000, -400]);
    expect(formatClockSteps(steps)[0]).toMatch(
      /^wall clock stepped \+3000 ms against the monotonic clock \(seen at \d\d:\d\d:\d\d\.\d{3}\)$/,
    );
  });

  it('ignores the 1 ms truncation, a slow slew and a sample it was preempted in', () => {
    const { c, clocks } = fakeClocks();
    const watch = new ClockStepWatch(clocks);
    watch.sample();
    for (let i = 0; i < 200; i++) {
      c.mono += 50;
      c.wall += 0.5; // a slew of 10 ms/s adds up to 100 ms, never 20 ms between samples
      watch.sample();
    }
    c.tick = 5; // a sample that took 10 ms says nothing, whatever it read
    c.wall += 1_000;
    watch.sample();
    c.wall -= 1_000;
    c.tick = 0.01;
    c.mono += 50;
    watch.sample();
    expect(watch.stop()).toEqual([]);
  });
});
