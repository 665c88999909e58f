import { describe, expect, it } from 'vitest';
import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { eventsOnMachineClock, type RedisClockStep } from './redis-clock-steps.js';

const T = Date.parse('2026-12-04T12:00:00.000Z');
const iso = (ms: number): string => new Date(ms).toISOString();
/** An event with stream id `id` stamped at Redis time `at` (ms). */
const ev = (id: string, at: number): GroupEventEntry => ({
  id,
  type: 'SHARDS_ASSIGNED',
  at: iso(at),
  groupEpoch: 1,
  data: {},
});
const step = (
  at: number,
  offsetMs: number,
  before: string | null,
  after: string | null,
): RedisClockStep => ({
  at,
  offsetMs,
  lastEventIds: { g: { before, after } },
});

describe('eventsOnMachineClock', () => {
  it('a step back then forward: each event goes back onto the machine clock by its id', () => {
    // machine: 0 s, 1 s; step back 20 s at 1.5 s; events at 2 s and 3 s (Redis says -18 s,
    // -17 s; ids keep growing); back to true at 3.5 s; an event at 4 s
    const events = [
      ev(`${T}-0`, T),
      ev(`${T + 1000}-0`, T + 1000),
      ev(`${T + 1000}-1`, T + 2000 - 20_000),
      ev(`${T + 1000}-2`, T + 3000 - 20_000),
      ev(`${T + 4000}-0`, T + 4000),
    ];
    const steps = [
      step(T + 1500, -20_000, `${T + 1000}-0`, `${T + 1000}-0`),
      step(T + 3500, 0, `${T + 1000}-2`, `${T + 1000}-2`),
    ];
    expect(eventsOnMachineClock(events, steps, 'g').map((e) => Date.parse(e.at) - T)).toEqual([
      0, 1000, 2000, 3000, 4000,
    ]);
  });

  it('a step ahead, an event between the two id reads, and an empty log before the step', () => {
    const events = [ev(`${T + 30_000}-0`, T + 30_000), ev(`${T + 31_000}-0`, T + 31_000)];
    // the first event was committed while the step was being made: it is timed at the step
    const steps = [step(T + 2, 30_000, null, `${T + 30_000}-0`)];
    expect(eventsOnMachineClock(events, steps, 'g').map((e) => Date.parse(e.at) - T)).toEqual([
      2, 1000,
    ]);
  });

  it('leaves the events as they are without steps; refuses a step that did not record the group', () => {
    const events = [ev(`${T}-0`, T)];
    expect(eventsOnMachineClock(events, [], 'g')).toEqual(events);
    expect(() => eventsOnMachineClock(events, [step(T, 5, null, null)], 'other')).toThrow(
      /did not record group other/,
    );
  });
});
