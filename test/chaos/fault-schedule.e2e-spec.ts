import { describe, expect, it } from 'vitest';
import { ChaosConfigError } from './harness/chaos-config.error.js';
import { loadChaosConfig } from './harness/chaos-config.js';
import { expectedMembers } from './harness/chaos-run.js';
import {
  FAULT_KINDS,
  type FaultSchedule,
  formatSchedule,
  type ScheduledAction,
  planFaults,
} from './harness/fault-schedule.js';
import { SeededRandom } from './harness/seeded-random.js';

const CI = loadChaosConfig({ CHAOS_SEED: '1' });
const SOAK = loadChaosConfig({ CHAOS_PROFILE: 'soak', CHAOS_SEED: '1' });

/** Replays the member actions: the live count after each one, and overlapping faults per target. */
function replay(schedule: FaultSchedule): { counts: number[]; overlaps: string[] } {
  const alive = new Set(schedule.initialMembers);
  const counts: number[] = [];
  for (const { action } of schedule.actions) {
    if (action.type === 'start-member') alive.add(action.member);
    if (action.type === 'signal-member') alive.delete(action.member);
    counts.push(alive.size);
  }
  // per target, the span of one fault's actions never overlaps another fault's span
  const spans = new Map<string, Array<{ fault: number; from: number; to: number }>>();
  for (const f of schedule.faults) {
    const mine = new Map<string, { fault: number; from: number; to: number }>();
    for (const a of f.actions) {
      const span = mine.get(a.target) ?? { fault: f.index, from: a.at, to: a.at };
      span.from = Math.min(span.from, a.at);
      span.to = Math.max(span.to, a.at);
      mine.set(a.target, span);
    }
    for (const [target, span] of mine) spans.set(target, [...(spans.get(target) ?? []), span]);
  }
  const overlaps: string[] = [];
  for (const [target, list] of spans) {
    for (let i = 1; i < list.length; i++) {
      const [prev, next] = [list[i - 1], list[i]] as [
        { fault: number; to: number },
        { fault: number; from: number },
      ];
      if (next.from <= prev.to)
        overlaps.push(`${target}: faults ${prev.fault + 1} and ${next.fault + 1}`);
    }
  }
  return { counts, overlaps };
}

describe('chaos harness: the seeded fault schedule', () => {
  it('is a pure function of the seed: the same seed gives the same schedule, another seed another', () => {
    const a = planFaults(CI, 42);
    expect(planFaults(CI, 42)).toEqual(a);
    expect(formatSchedule(planFaults(CI, 42))).toBe(formatSchedule(a));
    expect(planFaults(CI, 43).faults.map((f) => f.description)).not.toEqual(
      a.faults.map((f) => f.description),
    );
    expect(new SeededRandom(7).next()).toBe(new SeededRandom(7).next());
  });

  it('covers every fault kind in a CI-sized run, for any seed', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const kinds = new Set(planFaults(CI, seed).faults.map((f) => f.kind));
      expect({ seed, missing: FAULT_KINDS.filter((k) => !kinds.has(k)) }).toEqual({
        seed,
        missing: [],
      });
    }
  });

  it('keeps the group within its size bounds and never puts one target in two faults at once', () => {
    for (const sizing of [CI, SOAK]) {
      for (let seed = 1; seed <= 100; seed++) {
        const schedule = planFaults(sizing, seed);
        const { counts, overlaps } = replay(schedule);
        expect(overlaps, `seed ${seed}`).toEqual([]);
        // a SIGKILLed member is replaced (or restarted) within seconds: one below the bound
        expect(Math.min(...counts), `seed ${seed}`).toBeGreaterThanOrEqual(sizing.minMembers - 1);
        expect(Math.max(...counts), `seed ${seed}`).toBeLessThanOrEqual(sizing.maxMembers);
        expect(expectedMembers(schedule).length, `seed ${seed}`).toBeGreaterThanOrEqual(
          sizing.minMembers,
        );
        // every fault that stops something brings it back (or a replacement joins)
        const starts = schedule.actions.filter((a) => a.action.type === 'start-coordinator');
        const stops = schedule.actions.filter((a) => a.action.type === 'stop-coordinator');
        expect(starts.length).toBe(stops.length);
        const thaws = schedule.actions.filter((a) => a.action.type === 'thaw').length;
        expect(schedule.actions.filter((a) => a.action.type === 'freeze').length).toBe(thaws);
      }
    }
  });

  it('zombie freezes outlast the session timeout; partitions span short, self-fence and expiry lengths', () => {
    const freezes: number[] = [];
    const partitions: number[] = [];
    for (let seed = 1; seed <= 100; seed++) {
      for (const f of planFaults(CI, seed).faults) {
        const [first, last] = [f.actions[0], f.actions.at(-1)];
        if (!first || !last) continue;
        if (f.kind === 'freeze-member') freezes.push(last.at - first.at);
        if (f.kind === 'partition-member') partitions.push(last.at - first.at);
      }
    }
    expect(freezes.some((ms) => ms > CI.sessionTimeoutMs)).toBe(true);
    expect(partitions.some((ms) => ms < CI.sessionTimeoutMs * 0.75)).toBe(true);
    expect(
      partitions.some((ms) => ms > CI.sessionTimeoutMs * 0.75 && ms < CI.sessionTimeoutMs),
    ).toBe(true);
    expect(partitions.some((ms) => ms > CI.sessionTimeoutMs)).toBe(true);
  });
  it('an idle-group-reshard stops the idle group, then reshards, then starts it, on one target', () => {
    for (let seed = 1; seed <= 100; seed++) {
      for (const f of planFaults(CI, seed).faults.filter((x) => x.kind === 'idle-group-reshard')) {
        expect(
          f.actions.map((a) => `${a.target}:${a.action.type}`),
          `seed ${seed}`,
        ).toEqual([
          'idle-group:stop-idle-group',
          'idle-group:reshard',
          'idle-group:start-idle-group',
        ]);
        const [stop, reshard, start] = f.actions as [
          ScheduledAction,
          ScheduledAction,
          ScheduledAction,
        ];
        expect(stop.at < reshard.at && reshard.at < start.at, `seed ${seed}`).toBe(true);
      }
    }
  });
});

describe('chaos harness: configuration from the environment', () => {
  it('sizes the soak from SOAK_MINUTES (CHAOS_DURATION_MS wins) and takes the seed given', () => {
    expect(loadChaosConfig({}).profile).toBe('ci');
    expect(loadChaosConfig({ CHAOS_PROFILE: 'soak', SOAK_MINUTES: '12' }).durationMs).toBe(720_000);
    expect(
      loadChaosConfig({ CHAOS_PROFILE: 'soak', SOAK_MINUTES: '12', CHAOS_DURATION_MS: '60000' })
        .durationMs,
    ).toBe(60_000);
    expect(loadChaosConfig({ CHAOS_SEED: '123' }).seed).toBe(123);
    expect(loadChaosConfig({}).seed).toBeGreaterThan(0);
  });

  it('refuses bad values, naming the variable', () => {
    for (const [env, name] of [
      [{ CHAOS_PROFILE: 'long' }, 'CHAOS_PROFILE'],
      [{ CHAOS_SEED: '-3' }, 'CHAOS_SEED'],
      [{ CHAOS_SEED: '1.5' }, 'CHAOS_SEED'],
      [{ CHAOS_DURATION_MS: 'soon' }, 'CHAOS_DURATION_MS'],
      [{ CHAOS_DURATION_MS: '500' }, 'CHAOS_DURATION_MS'],
      [{ CHAOS_PROFILE: 'soak', SOAK_MINUTES: '0' }, 'SOAK_MINUTES'],
      [{ CHAOS_RATE: 'fast' }, 'CHAOS_RATE'],
    ] as const) {
      expect(() => loadChaosConfig(env)).toThrow(ChaosConfigError);
      expect(() => loadChaosConfig(env)).toThrow(name);
    }
  });
});
