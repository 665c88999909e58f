import type { DescribedGroup, GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { type CoordinatorApi, TEST_TOKENS } from '../../support/coordinator-process.js';
import { OwnershipMonitor } from './ownership-monitor.js';
import { SimulatedMember, type SimulatedMemberOptions } from './simulated-member.js';

/** Options every member of a {@link MemberFleet} shares. */
export type FleetMemberOptions = Omit<
  SimulatedMemberOptions,
  'memberId' | 'groupId' | 'monitor' | 'token'
>;

/**
 * A set of simulated members of one group sharing one {@link OwnershipMonitor}, with the
 * end-of-test summaries the suites assert on.
 */
export class MemberFleet {
  readonly monitor = new OwnershipMonitor();
  readonly members = new Map<string, SimulatedMember>();

  constructor(
    readonly groupId: string,
    private readonly defaults: FleetMemberOptions,
  ) {}

  /** Creates and starts a member. */
  add(memberId: string, overrides: Partial<FleetMemberOptions> = {}): SimulatedMember {
    const member = new SimulatedMember({
      ...this.defaults,
      ...overrides,
      memberId,
      groupId: this.groupId,
      monitor: this.monitor,
      token: TEST_TOKENS.member,
    });
    this.members.set(memberId, member);
    member.start();
    return member;
  }

  get(memberId: string): SimulatedMember {
    const m = this.members.get(memberId);
    if (!m) throw new Error(`no member ${memberId}`);
    return m;
  }

  /** Ids of the members currently running (joined, not left or crashed). */
  runningIds(): string[] {
    return [...this.members.values()].filter((m) => m.running).map((m) => m.memberId);
  }

  /** Every violation any member or the monitor recorded. */
  violations(): string[] {
    return [
      ...this.monitor.violations,
      ...[...this.members.values()].flatMap((m) => [...m.violations, ...m.unexpected]),
    ];
  }

  /** Totals of every member's counters. */
  totals(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const m of this.members.values()) {
      for (const [k, v] of Object.entries(m.counts)) out[k] = (out[k] ?? 0) + v;
    }
    return out;
  }

  /** True when every running member's own assignment equals its describe assignment. */
  viewsMatch(group: DescribedGroup): string[] {
    const problems: string[] = [];
    for (const id of this.runningIds()) {
      const member = this.get(id);
      const described = group.members.find((m) => m.memberId === id);
      const want = (described?.assignment ?? [])
        .flatMap((e) => e.shards.map((s) => `${e.stream}/${s}`))
        .sort();
      const have = [...member.held].sort();
      if (want.join(',') !== have.join(','))
        problems.push(`${id} holds [${have.join(',')}], describe says [${want.join(',')}]`);
    }
    return problems;
  }

  async dispose(): Promise<void> {
    await Promise.all([...this.members.values()].map((m) => m.dispose()));
  }
}

/** Every event of a group's log (pages of 1000). */
export async function allEvents(api: CoordinatorApi, groupId: string): Promise<GroupEventEntry[]> {
  const out: GroupEventEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const q = after ? `?after=${encodeURIComponent(after)}&limit=1000` : '?limit=1000';
    const res = await api.get<{ events: GroupEventEntry[] }>(`/v1/groups/${groupId}/events${q}`);
    if (res.status !== 200) throw new Error(`events → ${res.status} ${JSON.stringify(res.body)}`);
    out.push(...res.body.events);
    if (res.body.events.length < 1000) return out;
    after = res.body.events.at(-1)?.id;
  }
}

/** Problems with the epoch bumps of an event log: each GROUP_EPOCH_BUMPED must be the previous + 1. */
export function epochBumpProblems(events: readonly GroupEventEntry[]): string[] {
  const problems: string[] = [];
  let last: number | null = null;
  for (const e of events) {
    if (e.type !== 'GROUP_EPOCH_BUMPED') continue;
    const epoch = Number(e.data.groupEpoch);
    if (last !== null && epoch !== last + 1)
      problems.push(`epoch bump to ${epoch} after ${last} (event ${e.id})`);
    last = epoch;
  }
  return problems;
}
