import { describe, expect, it, vi } from 'vitest';
import type { GroupScan, GroupStore } from '../store/group-store.js';
import { type ClockAdvance, RedisClock } from '../store/redis-clock.js';
import type { GroupCoordinator } from './group-coordinator.js';
import { SessionTimers } from './session-timers.js';

const SESSION_MS = 3000;
/** Groups the timers scan per round trip. */
const SCAN_BATCH_SIZE = 32;

/**
 * Timers over one group `g` whose scans answer `next()` (the Redis clock and the stale members),
 * on a local monotonic clock the test moves; every scan takes 5 ms of it.
 */
function timersOver(
  next: (groupId: string) => {
    now: number;
    stale?: string[];
    revokeDeadline?: number;
  },
  revoking: ReadonlyArray<{ memberId: string; revokeStartedAt: number }> = [],
  groupIds: readonly string[] | (() => readonly string[]) = ['g'],
  /** Runs after a scan is sent, before it is answered. */
  onScan: (groupId: string) => void = () => undefined,
  /** The coordinator's last reading of a group's Redis clock (`at`: the local monotonic time). */
  lastObserved: (
    groupId: string,
    mono: number,
  ) => { redisNow: number; at: number; sentAt: number } | undefined = () => undefined,
  /** Jumps the coordinator's other readings of groups' clocks showed since the last tick. */
  advances: (mono: number) => Map<string, ClockAdvance> = () => new Map(),
  /** A real clock on the test's monotonic clock instead of the stand-in above. */
  realClock = false,
) {
  const listed = (): readonly string[] => (typeof groupIds === 'function' ? groupIds() : groupIds);
  let mono = 0;
  const expire = vi.fn(
    async (_groupId: string, _memberId: string, _condition: unknown) => undefined,
  );
  const warn = vi.fn();
  const store = {
    listGroupIds: async () => [...listed()],
    scan: async (groupId: string): Promise<GroupScan> => {
      onScan(groupId);
      mono += 5;
      const { now, stale = [], revokeDeadline = null } = next(groupId);
      return {
        now,
        version: 1,
        revokeDeadline,
        stale: stale.map((memberId) => ({ memberId, seenAt: 999_000 })),
      };
    },
  } as unknown as GroupStore;
  const coordinator = {
    rules: { sessionTimeoutMs: SESSION_MS },
    clock: realClock
      ? new RedisClock(() => mono)
      : {
          observeGroup: () => undefined,
          mark: () => mono,
          retainGroups: () => undefined,
          takeAdvances: () => advances(mono),
          lastObserved: (groupId: string) => lastObserved(groupId, mono),
        },
    cachedGroups: () => {
      const cached = {
        exists: true,
        state: {
          meta: { version: 1 },
          members: new Map(
            revoking.map((m) => [
              m.memberId,
              { ...m, state: 'UNREVOKED_SHARDS', rebalanceTimeoutMs: SESSION_MS },
            ]),
          ),
        },
      };
      return new Map(listed().includes('g') ? [['g', cached]] : []);
    },
    expire,
  } as unknown as GroupCoordinator;
  const timers = new SessionTimers(store, coordinator, 100, { warn }, null, () => mono);
  return {
    timers,
    clock: coordinator.clock,
    /** Local monotonic time now. */
    mono: () => mono,
    expire,
    warn,
    /** Local time passes (ms). */
    wait: (ms: number) => {
      mono += ms;
    },
    restartClock: () => timers.restartClock(),
  };
}

describe('SessionTimers', () => {
  it('a jump a heartbeat read first restarts every timer before anyone is judged', async () => {
    // A young group (not scanned by this replica yet) moved to a master 5 s ahead, and a
    // heartbeat read that clock before the first scan: the scan finds nothing to compare with
    // (the last reading is on the new clock already), so the heartbeat's reading must count.
    const run = async (reported: boolean) => {
      let groups: string[] = [];
      const t = timersOver(
        () => ({ now: 1_005_100, stale: ['a'] }),
        [],
        () => groups,
        () => undefined,
        (_groupId, mono) => ({ redisNow: 1_005_050, at: mono - 50, sentAt: mono - 52 }),
        (mono) =>
          reported && groups.length > 0
            ? new Map([['g', { aheadMs: 5000, elapsedMs: 100, at: mono - 50 }]])
            : new Map(),
      );
      t.restartClock();
      await t.timers.tick();
      t.wait(4000);
      groups = ['g'];
      await t.timers.tick();
      return t;
    };
    const restarted = await run(true);
    expect(restarted.expire).not.toHaveBeenCalled();
    expect(String(restarted.warn.mock.calls[0]?.[0])).toContain('the Redis clock jumped ahead');
    expect((await run(false)).expire).toHaveBeenCalledTimes(1);
  });

  it('a scan answered late followed by a heartbeat is no jump', async () => {
    // A slow master (or a busy event loop) holds one scan's answer for 1.5 s; a heartbeat then
    // reads the group's clock. Counted from the scan's send, not its late arrival: no jump.
    let now = 1_000_000;
    let slow = false;
    let delay = (): void => undefined;
    const t = timersOver(
      () => ({ now, stale: [] }),
      [],
      ['g'],
      () => {
        if (slow) delay();
      },
      undefined,
      undefined,
      true,
    );
    delay = () => t.wait(1500);
    t.restartClock();
    await t.timers.tick();
    slow = true;
    t.wait(100);
    now += 105;
    await t.timers.tick(); // executed at `now`, read by the loop 1.5 s later
    const sent = t.clock.mark();
    t.wait(10);
    t.clock.observeGroup('g', now + 1515, { sentAt: sent });
    slow = false;
    now += 1600;
    await t.timers.tick();
    expect(t.warn).not.toHaveBeenCalled();
  });

  it("a group's first scan is compared with the coordinator's last reading of its clock", async () => {
    // The group's heartbeat times were taken on a clock 5 s behind the master its slot moved to
    // before this replica first scanned it: a jump, not a reason to expire its members.
    const run = async (observed: boolean) => {
      let groups: string[] = [];
      const t = timersOver(
        () => ({ now: 1_005_100, stale: ['a'] }),
        [],
        () => groups,
        () => undefined,
        (_groupId, mono) =>
          observed ? { redisNow: 1_000_000, at: mono - 100, sentAt: mono - 102 } : undefined,
      );
      t.restartClock();
      await t.timers.tick();
      t.wait(4000);
      groups = ['g'];
      await t.timers.tick();
      return t;
    };
    const compared = await run(true);
    expect(compared.expire).not.toHaveBeenCalled();
    expect(String(compared.warn.mock.calls[0]?.[0])).toContain('the Redis clock jumped ahead');
    // Nothing to compare with: the member looks 5 s silent and is removed.
    expect((await run(false)).expire).toHaveBeenCalledTimes(1);
  });

  it('a member whose heartbeats stopped expires one session timeout after they did', async () => {
    let now = 1_000_000;
    const t = timersOver(() => ({ now, stale: now >= 1_003_000 ? ['m2'] : [] }));
    for (let step = 0; step < 40; step++) {
      await t.timers.tick();
      if (t.expire.mock.calls.length > 0) break;
      t.wait(100);
      now += 105;
    }
    expect(t.expire).toHaveBeenCalledTimes(1);
    expect(t.expire.mock.calls[0]?.[1]).toBe('m2');
    // the removal carries the heartbeat time the scan read (its commit re-checks it)
    expect(t.expire.mock.calls[0]?.[2]).toEqual({
      reason: 'expiry',
      seenBefore: now - SESSION_MS,
      seenAt: 999_000,
    });
    expect(t.warn).not.toHaveBeenCalled();
  });

  it('a replica starved between two scans does not spare a silent member', async () => {
    let now = 1_000_000;
    const t = timersOver(() => ({ now, stale: now >= 1_003_000 ? ['m2'] : [] }));
    await t.timers.tick();
    t.wait(4000); // this replica's event loop was blocked for 4 s; Redis's clock moved as much
    now += 4005;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledTimes(1);
    expect(t.warn).not.toHaveBeenCalled();
  });

  it('a forward jump of the Redis clock restarts the timers instead of expiring everyone', async () => {
    let now = 1_000_000;
    let stale: string[] = [];
    const t = timersOver(() => ({ now, stale }));
    await t.timers.tick();
    t.wait(3095);
    now = 1_003_100; // a full session timeout since the timers started, no jump
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    // the wall clock steps 3 s ahead: Redis moved 3.25 s while 0.25 s passed here; every member's
    // last heartbeat now looks 3 s older
    t.wait(245);
    now = 1_006_350;
    stale = ['m2'];
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    expect(t.warn).toHaveBeenCalledTimes(1);
    expect(String(t.warn.mock.calls[0]?.[0])).toContain('jumped ahead');
    // a member that really went silent expires a full session timeout after the jump
    t.wait(2645);
    now = 1_009_000;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    t.wait(395);
    now = 1_009_400;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledTimes(1);
    expect(t.warn).toHaveBeenCalledTimes(1);
  });

  it('a step back of the Redis clock does not lengthen the fresh period', async () => {
    let now = 1_000_000;
    let stale: string[] = [];
    const t = timersOver(() => ({ now, stale }));
    await t.timers.tick();
    // 30 s ahead (the timers start over at 1_030_250), then back again 245 ms later
    t.wait(245);
    now = 1_030_250;
    await t.timers.tick();
    t.wait(245);
    now = 1_000_500;
    await t.timers.tick();
    expect(t.warn).toHaveBeenCalledTimes(2);
    expect(String(t.warn.mock.calls[1]?.[0])).toContain('stepped back by about 29995 ms');
    // the timers started over at the jump ahead, 250 ms of this replica's time before the step
    // back: a silent member expires a session timeout after the jump, not 30 s later
    stale = ['m2'];
    t.wait(2600);
    now = 1_003_105;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    t.wait(300);
    now = 1_003_410;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledTimes(1);
  });

  it('a rebalance timeout that began before the timers started counts from their start', async () => {
    let now = 1_000_000;
    // m1 entered its revocation 10 s before this replica started its timers
    const t = timersOver(
      () => ({ now, revokeDeadline: 990_000 + SESSION_MS }),
      [{ memberId: 'm1', revokeStartedAt: 990_000 }],
    );
    await t.timers.tick();
    t.wait(2900);
    now += 2905;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    t.wait(200);
    now += 205;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledWith('g', 'm1', {
      reason: 'rebalance-timeout',
      revokeStartedAt: 990_000,
    });
  });

  it('Redis Cluster masters whose clocks disagree look like no step, and silent members expire', async () => {
    // 40 groups in two scan batches: the first 32 on a master 5 s ahead, the other 8 on one
    // that is not.
    const groups = Array.from({ length: 40 }, (_, k) => `g${k}`);
    const onB = new Set(groups.slice(32));
    let now = 1_000_000;
    let silent = false;
    const t = timersOver(
      (groupId) => ({
        now: onB.has(groupId) ? now : now + 5000,
        stale: silent && groupId === 'g39' ? ['m2'] : [],
      }),
      [],
      groups,
    );
    for (let i = 0; i < 40; i++) {
      await t.timers.tick();
      t.wait(100);
      now += 100 + 200; // the scans of 40 groups take 200 ms of this replica's clock
      if (i === 20) silent = true;
    }
    expect(t.warn).not.toHaveBeenCalled();
    expect(t.expire).toHaveBeenCalledWith(
      'g39',
      'm2',
      expect.objectContaining({ reason: 'expiry' }),
    );
  });

  it("a jump of some groups' clocks restarts every timer, logged once per tick", async () => {
    // c is scanned first and its clock did not jump; a silent member of c is spared all the same
    const groups = ['c', 'a', 'b'];
    let now = 1_000_000;
    let jumped = 0;
    const t = timersOver(
      (groupId) => ({
        now: groupId === 'c' ? now : now + jumped,
        stale: groupId === 'c' && jumped > 0 ? ['m2'] : [],
      }),
      [],
      groups,
    );
    for (let i = 0; i < 31; i++) {
      await t.timers.tick();
      t.wait(100);
      now += 115;
    }
    expect(t.warn).not.toHaveBeenCalled();
    jumped = 20_000;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    expect(t.warn).toHaveBeenCalledTimes(1);
    expect(String(t.warn.mock.calls[0]?.[0])).toMatch(
      /jumped ahead by about 199\d\d ms \(2 groups\)/,
    );
  });

  it('a group first listed in the tick of a jump, ahead of known groups, is judged after the jump is seen', async () => {
    let now = 1_000_000;
    let groups = ['b'];
    let jumped = false;
    const t = timersOver(
      (groupId) => ({ now, stale: groupId === 'a' && jumped ? ['m'] : [] }),
      [],
      () => groups,
    );
    for (let i = 0; i < 8; i++) {
      await t.timers.tick(); // 'b' only; 8 × 600 ms is past the fresh period
      t.wait(600);
      now += 605;
    }
    groups = ['a', 'b']; // the 9th tick reads the list again
    now += 20_000; // and Redis's clock jumped 20 s
    jumped = true;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    expect(String(t.warn.mock.calls[0]?.[0])).toContain('jumped ahead');
  });

  it('a jump shown only by a later batch spares the members of new groups in an earlier one', async () => {
    let now = 1_000_000;
    // 'z' is known; 32 new groups, sorted before it, fill the first batch of the jump's tick
    const fresh = Array.from(
      { length: SCAN_BATCH_SIZE },
      (_, k) => `a${String(k).padStart(2, '0')}`,
    );
    let groups = ['z'];
    let jumped = false;
    const t = timersOver(
      (groupId) => ({ now, stale: groupId === 'a00' && jumped ? ['m'] : [] }),
      [],
      () => groups,
    );
    for (let i = 0; i < 8; i++) {
      await t.timers.tick();
      t.wait(600);
      now += 605;
    }
    groups = [...fresh, 'z'];
    now += 20_000;
    jumped = true;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    expect(String(t.warn.mock.calls[0]?.[0])).toContain('jumped ahead');
  });

  it('a group whose scan fails is skipped; the others are still judged', async () => {
    let now = 1_000_000;
    let failing = false;
    const groups = Array.from({ length: 40 }, (_, k) => `g${String(k).padStart(2, '0')}`);
    const t = timersOver(
      (groupId) => {
        if (failing && groupId === 'g35') throw new Error('WRONGTYPE');
        return { now, stale: failing && groupId === 'g00' ? ['m'] : [] };
      },
      [],
      groups,
    );
    for (let i = 0; i < 31; i++) {
      await t.timers.tick();
      t.wait(100);
      now += 105;
    }
    failing = true;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledWith(
      'g00',
      'm',
      expect.objectContaining({ reason: 'expiry' }),
    );
    expect(t.warn).toHaveBeenCalledTimes(1);
    expect(String(t.warn.mock.calls[0]?.[0])).toContain(
      'could not scan 1 of 40 groups (g35: Error: WRONGTYPE)',
    );
  });

  it('a scan sent before a reconnect and answered after it does not move the fresh period back', async () => {
    let now = 1_000_000;
    let stale: string[] = [];
    let outage = false;
    const t = timersOver(
      () => ({ now, stale }),
      [],
      ['g'],
      () => {
        if (!outage) return;
        outage = false;
        // the scan waits in the client's queue while Redis is away for 20 s; the reconnect
        // restarts the timers before the resent scan is answered
        t.wait(20_000);
        now += 20_000;
        t.restartClock();
        stale = ['m2']; // nobody could heartbeat meanwhile
      },
    );
    for (let i = 0; i < 5; i++) {
      await t.timers.tick();
      t.wait(100);
      now += 105;
    }
    outage = true;
    await t.timers.tick();
    t.wait(100);
    now += 105;
    await t.timers.tick();
    expect(t.expire).not.toHaveBeenCalled();
    t.wait(2900);
    now += 2905;
    await t.timers.tick();
    expect(t.expire).toHaveBeenCalledTimes(1);
  });

  it('no step is seen while Redis time and this replica keep pace, slow scans included', async () => {
    let now = 1_000_000;
    const t = timersOver(() => ({ now }));
    for (let i = 0; i < 50; i++) {
      await t.timers.tick();
      // this replica waits 100 ms, then its scan takes 5 ms; Redis's TIME is read anywhere in
      // between, the clocks' rates up to 0.1 % apart
      const waited = 100 + (i % 7) * 40;
      t.wait(waited);
      now += Math.round((waited + 5 * ((i % 3) / 2)) * (1 + ((i % 5) - 2) / 1000));
    }
    expect(t.warn).not.toHaveBeenCalled();
  });
});
