import type { ChaosConfig } from './chaos-config.js';
import { SeededRandom } from './seeded-random.js';

/** The faults a schedule is drawn from. */
export const FAULT_KINDS = [
  'kill-member',
  'term-member',
  'freeze-member',
  'partition-member',
  'slow-heartbeats',
  'drop-heartbeat-responses',
  'kill-coordinator',
  'restart-redis',
  'lose-redis-writes',
  'step-redis-clock',
  'join-member',
  'reshard',
  'recreate-group',
  'idle-group-reshard',
] as const;

/** One kind of fault. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One step the harness performs. */
export type ChaosAction =
  | { readonly type: 'start-member'; readonly member: string }
  | {
      readonly type: 'signal-member';
      readonly member: string;
      readonly signal: 'SIGKILL' | 'SIGTERM';
    }
  | { readonly type: 'freeze'; readonly member: string }
  | { readonly type: 'thaw'; readonly member: string }
  | { readonly type: 'black-hole'; readonly member: string }
  | { readonly type: 'heal'; readonly member: string; readonly cut: boolean }
  | { readonly type: 'delay-responses'; readonly member: string; readonly ms: number }
  | { readonly type: 'drop-responses'; readonly member: string }
  | {
      readonly type: 'stop-coordinator';
      readonly replica: 'A' | 'B';
      readonly signal: 'SIGKILL' | 'SIGTERM';
    }
  | { readonly type: 'start-coordinator'; readonly replica: 'A' | 'B' }
  | { readonly type: 'restart-redis'; readonly crash: boolean }
  | { readonly type: 'rollback-redis'; readonly lostMs: number }
  /** Sets Redis's wall clock `offsetMs` from true (its monotonic clock untouched). */
  | { readonly type: 'set-redis-clock'; readonly offsetMs: number }
  | { readonly type: 'reshard'; readonly shards: number }
  | { readonly type: 'recreate-group'; readonly group: string }
  | { readonly type: 'stop-idle-group' }
  | { readonly type: 'start-idle-group' };

/** An action at its planned time (ms after the fault phase began). */
export interface ScheduledAction {
  readonly at: number;
  readonly action: ChaosAction;
  /** The fault it belongs to. */
  readonly fault: number;
  /**
   * What it acts on (a member id, `coordinator`, `redis`, `reshard`): actions on one target run
   * one after another, in schedule order, however late the machine makes them.
   */
  readonly target: string;
}

/** One fault: a kind, when it starts, what it does. */
export interface PlannedFault {
  readonly index: number;
  readonly kind: FaultKind;
  readonly at: number;
  readonly description: string;
  readonly actions: readonly ScheduledAction[];
}

/** A whole run's faults, a pure function of the seed and the run's size. */
export interface FaultSchedule {
  readonly seed: number;
  readonly durationMs: number;
  readonly initialMembers: readonly string[];
  readonly faults: readonly PlannedFault[];
  /** Every action of every fault, by time (ties in fault order). */
  readonly actions: readonly ScheduledAction[];
}

/** The part of {@link ChaosConfig} a schedule depends on. */
export type ScheduleSizing = Pick<
  ChaosConfig,
  | 'durationMs'
  | 'meanFaultGapMs'
  | 'initialMembers'
  | 'minMembers'
  | 'maxMembers'
  | 'shards'
  | 'reshardTo'
  | 'sessionTimeoutMs'
>;

/** Time after its end before a target takes part in the next fault (rejoin, restart). */
const SETTLE_MS = 2500;
/** The first fault starts this long after the phase began (the group has settled). */
const FIRST_FAULT_MS = 3000;

/** The planner's running picture of the cluster. */
class PlanState {
  readonly alive: string[] = [];
  readonly busyUntil = new Map<string, number>();
  shards: number;
  private nextMember = 1;

  constructor(sizing: ScheduleSizing) {
    this.shards = sizing.shards;
    for (let i = 0; i < sizing.initialMembers; i++) this.alive.push(this.newMember());
  }

  newMember(): string {
    return `m${this.nextMember++}`;
  }

  free(target: string, at: number): boolean {
    return (this.busyUntil.get(target) ?? 0) <= at;
  }

  busy(target: string, until: number): void {
    this.busyUntil.set(target, Math.max(until, this.busyUntil.get(target) ?? 0));
  }

  freeMembers(at: number): string[] {
    return this.alive.filter((m) => this.free(m, at));
  }

  retire(member: string): void {
    const i = this.alive.indexOf(member);
    if (i >= 0) this.alive.splice(i, 1);
  }
}

/**
 * Draws a fault schedule from `seed`: faults start every `meanFaultGapMs` on average (0.5–1.5×)
 * during `durationMs`; kinds come in rounds, each round every kind once in a seeded order (a kind
 * that does not fit the cluster at that moment — no free member, the group at its size bound, a
 * replica or Redis already down — waits for a later turn), so even a short run sees every kind.
 * The plan tracks which members are alive and keeps their number within bounds; no target is in
 * two faults at once. The same seed and sizing always give the same schedule.
 */
export function planFaults(sizing: ScheduleSizing, seed: number): FaultSchedule {
  const random = new SeededRandom(seed);
  const state = new PlanState(sizing);
  const initialMembers = [...state.alive];
  const faults: PlannedFault[] = [];
  let round: FaultKind[] = [];
  let t = FIRST_FAULT_MS;
  while (t < sizing.durationMs) {
    if (round.length === 0) round = random.shuffle(FAULT_KINDS);
    let planned: PlannedFault | null = null;
    for (let i = 0; i < round.length && planned === null; i++) {
      planned = planOne(round[i] as FaultKind, t, faults.length, sizing, state, random);
      if (planned !== null) round.splice(i, 1);
    }
    if (planned !== null) faults.push(planned);
    t += Math.round(random.between(0.5, 1.5) * sizing.meanFaultGapMs);
  }
  const actions = faults.flatMap((f) => f.actions).sort((a, b) => a.at - b.at || a.fault - b.fault);
  return { seed, durationMs: sizing.durationMs, initialMembers, faults, actions };
}

function planOne(
  kind: FaultKind,
  at: number,
  index: number,
  sizing: ScheduleSizing,
  state: PlanState,
  random: SeededRandom,
): PlannedFault | null {
  const actions: ScheduledAction[] = [];
  const act = (delay: number, target: string, action: ChaosAction): void => {
    actions.push({ at: at + Math.round(delay), action, fault: index, target });
  };
  const fault = (description: string): PlannedFault => ({ index, kind, at, description, actions });
  const session = sizing.sessionTimeoutMs;
  const free = state.freeMembers(at);
  const infra = state.free('coordinator', at) && state.free('redis', at);
  switch (kind) {
    case 'kill-member': {
      if (free.length === 0 || state.alive.length < 2) return null;
      const member = random.pick(free);
      const down = random.int(300, 4000);
      act(0, member, { type: 'signal-member', member, signal: 'SIGKILL' });
      if (random.chance(0.5)) {
        act(down, member, { type: 'start-member', member });
        state.busy(member, at + down + SETTLE_MS);
        return fault(`SIGKILL ${member}, restarted with the same member id ${down} ms later`);
      }
      state.retire(member);
      const replacement = state.newMember();
      state.alive.push(replacement);
      act(down, replacement, { type: 'start-member', member: replacement });
      state.busy(replacement, at + down + SETTLE_MS);
      return fault(`SIGKILL ${member}; ${replacement} joins ${down} ms later`);
    }
    case 'term-member': {
      if (free.length === 0 || state.alive.length <= sizing.minMembers) return null;
      const member = random.pick(free);
      act(0, member, { type: 'signal-member', member, signal: 'SIGTERM' });
      state.retire(member);
      return fault(`SIGTERM ${member} (graceful leave)`);
    }
    case 'join-member': {
      if (state.alive.length >= sizing.maxMembers) return null;
      const member = state.newMember();
      state.alive.push(member);
      act(0, member, { type: 'start-member', member });
      state.busy(member, at + SETTLE_MS);
      return fault(`${member} joins`);
    }
    case 'freeze-member': {
      if (free.length === 0 || state.alive.length < 2) return null;
      const member = random.pick(free);
      const zombie = random.chance(0.8);
      const ms = zombie ? session + random.int(500, 3000) : random.int(300, 1500);
      act(0, member, { type: 'freeze', member });
      act(ms, member, { type: 'thaw', member });
      state.busy(member, at + ms + SETTLE_MS);
      return fault(
        `SIGSTOP ${member} for ${ms} ms${zombie ? ' (past the session timeout: a zombie)' : ''}, then SIGCONT`,
      );
    }
    case 'partition-member': {
      if (free.length === 0) return null;
      const member = random.pick(free);
      const length = random.pick(['short', 'self-fence', 'expire'] as const);
      const ms =
        length === 'short'
          ? random.int(300, 1500)
          : length === 'self-fence'
            ? random.int(Math.round(session * 0.8), Math.round(session * 0.95))
            : random.int(session + 500, session * 2 + 1000);
      const cut = random.chance(0.5);
      act(0, member, { type: 'black-hole', member });
      act(ms, member, { type: 'heal', member, cut });
      state.busy(member, at + ms + SETTLE_MS);
      return fault(
        `cut ${member} off from the coordinators (not from Redis) for ${ms} ms (${length}), then ${cut ? 'reset its connections' : 'let held bytes through'}`,
      );
    }
    case 'slow-heartbeats': {
      if (free.length === 0) return null;
      const member = random.pick(free);
      const delay = random.int(100, session);
      const ms = random.int(2000, 6000);
      act(0, member, { type: 'delay-responses', member, ms: delay });
      act(ms, member, { type: 'delay-responses', member, ms: 0 });
      state.busy(member, at + ms + SETTLE_MS);
      return fault(`delay ${member}'s coordinator responses by ${delay} ms for ${ms} ms`);
    }
    case 'drop-heartbeat-responses': {
      if (free.length === 0) return null;
      const member = random.pick(free);
      const ms = random.int(500, Math.round(session * 1.3));
      act(0, member, { type: 'drop-responses', member });
      act(ms, member, { type: 'heal', member, cut: true });
      state.busy(member, at + ms + SETTLE_MS);
      return fault(`drop ${member}'s coordinator responses for ${ms} ms (requests still applied)`);
    }
    case 'kill-coordinator': {
      if (!infra) return null;
      const replica = random.pick(['A', 'B'] as const);
      const signal = random.chance(0.7) ? 'SIGKILL' : 'SIGTERM';
      const down = random.int(500, 5000);
      act(0, 'coordinator', { type: 'stop-coordinator', replica, signal });
      act(down, 'coordinator', { type: 'start-coordinator', replica });
      state.busy('coordinator', at + down + SETTLE_MS * 2);
      state.busy('redis', at + down + SETTLE_MS * 2);
      return fault(`${signal} coordinator replica ${replica}, restarted ${down} ms later`);
    }
    case 'restart-redis': {
      if (!infra) return null;
      const crash = random.chance(0.5);
      act(0, 'redis', { type: 'restart-redis', crash });
      state.busy('redis', at + SETTLE_MS * 2);
      state.busy('coordinator', at + SETTLE_MS * 2);
      return fault(`restart Redis (${crash ? 'SIGKILL, then AOF replay' : 'clean SIGTERM'})`);
    }
    case 'lose-redis-writes': {
      if (!infra) return null;
      const lostMs = random.int(700, 1300);
      act(0, 'redis', { type: 'rollback-redis', lostMs });
      state.busy('redis', at + lostMs + SETTLE_MS * 2);
      state.busy('coordinator', at + lostMs + SETTLE_MS * 2);
      return fault(
        `snapshot Redis's AOF, SIGKILL Redis ${lostMs} ms later, restart it from the snapshot (its last ${lostMs} ms of acknowledged writes lost)`,
      );
    }
    case 'step-redis-clock': {
      // (a coordinator replica may be down or restart meanwhile: one more interleaving)
      if (!state.free('redis', at)) return null;
      const ahead = random.chance(0.5);
      const stepMs = random.int(session * 2, session * 5);
      const holdMs = random.int(1000, 4000);
      act(0, 'redis', { type: 'set-redis-clock', offsetMs: ahead ? stepMs : -stepMs });
      act(holdMs, 'redis', { type: 'set-redis-clock', offsetMs: 0 });
      // After a step ahead, new stream ids stay at the highest millisecond Redis reached until
      // the clock catches up with it; a rollback before then would hand ids of lost entries to
      // new ones, which the checker (by entry id) cannot tell apart. Redis takes no other fault
      // until then (a product limitation, docs/exactly-once.md).
      state.busy('redis', at + holdMs + (ahead ? stepMs : 0) + SETTLE_MS);
      return fault(
        `step Redis's wall clock ${ahead ? 'ahead' : 'back'} by ${stepMs} ms (an NTP step), and back to true ${holdMs} ms later`,
      );
    }
    case 'reshard': {
      if (!state.free('reshard', at)) return null;
      const options = sizing.reshardTo.filter((n) => n !== state.shards);
      if (options.length === 0) return null;
      const shards = random.pick(options);
      act(0, 'reshard', { type: 'reshard', shards });
      const from = state.shards;
      state.shards = shards;
      state.busy('reshard', at + 20_000);
      return fault(`reshard ${from} → ${shards} shards`);
    }
    case 'idle-group-reshard': {
      if (!state.free('reshard', at) || !state.free('idle-group', at)) return null;
      const options = sizing.reshardTo.filter((n) => n !== state.shards);
      if (options.length === 0) return null;
      const shards = random.pick(options);
      const down = random.int(500, 4000);
      // one target: the reshard is asked for only once the group has no member left, and the
      // members come back only once the new layout is published (the injector waits for it)
      act(0, 'idle-group', { type: 'stop-idle-group' });
      act(1, 'idle-group', { type: 'reshard', shards });
      act(1 + down, 'idle-group', { type: 'start-idle-group' });
      const from = state.shards;
      state.shards = shards;
      state.busy('reshard', at + 15_000);
      state.busy('idle-group', at + down + SETTLE_MS * 2);
      return fault(
        `idle group: stop all its members, reshard ${from} → ${shards} shards, members back ≥ ${down} ms later (after the new layout)`,
      );
    }
    case 'recreate-group': {
      if (!state.free('side-group', at)) return null;
      const group = `side-${index + 1}`;
      act(0, 'side-group', { type: 'recreate-group', group });
      state.busy('side-group', at + SETTLE_MS);
      return fault(
        `side group ${group}: looked up on replica A, created, used and deleted on B, joined on A`,
      );
    }
  }
}

/** The schedule as printable lines (one per fault). */
export function formatSchedule(schedule: FaultSchedule): string {
  const lines = schedule.faults.map(
    (f) =>
      `  ${String(f.index + 1).padStart(3)}. +${(f.at / 1000).toFixed(1).padStart(6)} s  ${f.kind.padEnd(25)} ${f.description}`,
  );
  return [
    `fault schedule (seed ${schedule.seed}, ${schedule.faults.length} faults over ${Math.round(schedule.durationMs / 1000)} s, members at start: ${schedule.initialMembers.join(', ')}):`,
    ...lines,
  ].join('\n');
}
