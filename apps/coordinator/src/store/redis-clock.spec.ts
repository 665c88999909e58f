import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RedisClock } from './redis-clock.js';

describe('RedisClock', () => {
  const local = 1_700_000_000_000;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(local);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('reads the local clock until Redis was observed', () => {
    expect(new RedisClock().now()).toBe(local);
    expect(new RedisClock().now('g')).toBe(local);
  });

  it("keeps each group's clock apart: masters 5 s apart stamp each group on its own", () => {
    const clock = new RedisClock();
    clock.observeGroup('ahead', local + 5000, { sentAt: clock.mark() });
    clock.observeGroup('behind', local, { sentAt: clock.mark() });
    expect(clock.now('ahead')).toBe(local + 5000);
    expect(clock.now('behind')).toBe(local);
    // The shared estimate follows the last observation, whichever group it came from.
    expect(clock.now()).toBe(local);
    clock.observeGroup('ahead', local + 5000, { sentAt: clock.mark() });
    expect(clock.now()).toBe(local + 5000);
    expect(clock.now('behind')).toBe(local);
  });

  it('a group not observed yet falls back to the shared estimate', () => {
    const clock = new RedisClock();
    clock.observe(local + 300);
    expect(clock.now('new')).toBe(local + 300);
  });

  it('smooths small corrections and takes large ones at once', () => {
    const clock = new RedisClock();
    clock.observeGroup('g', local + 100, { sentAt: clock.mark() });
    clock.observeGroup('g', local + 200, { sentAt: clock.mark() });
    expect(clock.now('g')).toBe(local + 120);
    clock.observeGroup('g', local + 3000, { sentAt: clock.mark() });
    expect(clock.now('g')).toBe(local + 3000);
  });

  it('the observation time may be given (a reply read later than Redis answered)', () => {
    const clock = new RedisClock();
    clock.observeGroup('g', local + 1000, { sentAt: clock.mark(), localAt: local + 400 });
    expect(clock.now('g')).toBe(local + 600);
  });

  it('forgets the groups that no longer exist, which then fall back to the shared estimate', () => {
    const clock = new RedisClock();
    clock.observeGroup('deleted', local + 5000, { sentAt: clock.mark() });
    clock.observeGroup('kept', local + 7000, { sentAt: clock.mark() });
    clock.observe(local);
    clock.retainGroups(new Set(['kept', 'never-observed']));
    expect(clock.now('deleted')).toBe(local);
    expect(clock.now('kept')).toBe(local + 7000);
  });

  it("remembers a group's last reading and when it was made, on the monotonic clock", () => {
    let mono = 50;
    const clock = new RedisClock(() => mono);
    expect(clock.lastObserved('g')).toBeUndefined();
    clock.observeGroup('g', local + 5000, { sentAt: clock.mark() });
    mono = 80;
    clock.observeGroup('g', local + 5030, { sentAt: clock.mark() });
    clock.observe(local + 9000);
    expect(clock.lastObserved('g')).toMatchObject({ redisNow: local + 5030, at: 80 });
  });

  it('keeps the largest jump ahead a group showed between two readings, until taken', () => {
    let mono = 0;
    const clock = new RedisClock(() => mono);
    clock.observeGroup('g', local, { sentAt: clock.mark() });
    mono = 100;
    clock.observeGroup('g', local + 130, { sentAt: clock.mark() }); // 30 ms more than the local clock: jitter, still kept
    mono = 200;
    clock.observeGroup('g', local + 5230, { sentAt: clock.mark() }); // its slot moved to a master 5 s ahead
    mono = 300;
    clock.observeGroup('other', local + 9000, { sentAt: clock.mark(), watch: false });
    clock.observeGroup('other', local + 99_000, { sentAt: clock.mark(), watch: false }); // a scan: compared by the timers
    expect(clock.takeAdvances()).toEqual(
      new Map([['g', { aheadMs: 5000, elapsedMs: 100, at: 200 }]]),
    );
    expect(clock.takeAdvances().size).toBe(0);
    mono = 400;
    clock.observeGroup('g', local + 5300, { sentAt: clock.mark() }); // on time since
    expect(clock.takeAdvances().size).toBe(0);
  });

  it('a reading recorded late (a busy event loop) does not pass for a jump', () => {
    let mono = 0;
    const clock = new RedisClock(() => mono);
    const sent = clock.mark();
    mono = 900; // Redis answered at about 1 (local + 1); the loop got to the reply only at 900
    clock.observeGroup('g', local + 1, { sentAt: sent });
    mono = 1000;
    const next = clock.mark();
    mono = 1002;
    clock.observeGroup('g', local + 1001, { sentAt: next });
    expect(clock.takeAdvances().size).toBe(0);
    // Without the send times, the same readings count from when the first was recorded.
    mono = 900;
    clock.observeGroup('h', local + 1, { sentAt: clock.mark() });
    mono = 1002;
    clock.observeGroup('h', local + 1001, { sentAt: clock.mark() });
    expect(clock.takeAdvances().get('h')?.aheadMs).toBe(898);
  });
});
