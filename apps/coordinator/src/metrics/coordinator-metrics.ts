import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { pairs, shardRef } from '../core/assignment.js';
import type { GroupState } from '../core/group-state.js';
import { groupStateName } from '../core/group-state.js';
import type { GroupTransaction } from '../core/group-transaction.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import type { GroupCoordinatorObserver } from '../groups/group-coordinator.js';

/** Where the gauges read group state from at scrape time. */
export interface GroupStateSource {
  /** Every group, read authoritatively. */
  groups(): Promise<GroupState[]>;
  readonly catalog: StreamCatalog;
}

const MEMBER_STATES = ['STABLE', 'UNREVOKED_SHARDS', 'UNRELEASED_SHARDS', 'TEMPORARILY_LEFT'] as const;
const GROUP_STATES = ['EMPTY', 'ASSIGNING', 'RECONCILING', 'STABLE'] as const;

/**
 * The coordinator metrics of PROTOCOL.md §8, on the app's own prom-client registry (never the
 * global default one). Gauges are computed from authoritative group state when scraped; counters
 * and histograms are updated as requests are served. Label cardinality is bounded by the number
 * of groups (and assignors); no member ids or shard ids are used as labels.
 */
export class CoordinatorMetrics implements GroupCoordinatorObserver {
  private source: GroupStateSource | null = null;
  readonly heartbeats: Counter<'group' | 'outcome'>;
  readonly heartbeatDuration: Histogram;
  readonly rebalances: Counter<'group' | 'reason'>;
  readonly assignorDuration: Histogram<'assignor'>;
  readonly conflicts: Counter<'group'>;

  constructor(readonly registry: Registry) {
    const registers = [registry];
    this.heartbeats = new Counter({
      name: 'rsc_coordinator_heartbeats_total',
      help: 'Heartbeat requests served, by group and outcome (ok or the error code).',
      labelNames: ['group', 'outcome'],
      registers,
    });
    this.heartbeatDuration = new Histogram({
      name: 'rsc_coordinator_heartbeat_duration_seconds',
      help: 'Time to serve one heartbeat, including persistence and fence writes.',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.rebalances = new Counter({
      name: 'rsc_coordinator_rebalances_total',
      help: 'Group epoch bumps (each starts an incremental rebalance), by group and reason.',
      labelNames: ['group', 'reason'],
      registers,
    });
    this.assignorDuration = new Histogram({
      name: 'rsc_coordinator_assignor_duration_seconds',
      help: 'Time the server-side assignor took to compute a target assignment.',
      labelNames: ['assignor'],
      buckets: [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    });
    this.conflicts = new Counter({
      name: 'rsc_coordinator_cas_conflicts_total',
      help: 'Writes that lost a compare-and-set race to another replica and were recomputed.',
      labelNames: ['group'],
      registers,
    });
    this.registerGauges(registers);
  }

  /** Connects the gauges to the live group state. */
  bind(source: GroupStateSource): void {
    this.source = source;
  }

  onCommitted(groupId: string, txn: GroupTransaction): void {
    for (const e of txn.events) {
      if (e.type === 'GROUP_EPOCH_BUMPED') {
        this.rebalances.inc({ group: groupId, reason: String(e.data.reason ?? 'unknown') });
      }
    }
    for (const run of txn.assignorRuns) this.assignorDuration.observe({ assignor: run.assignor }, run.ms / 1000);
  }

  onConflict(groupId: string): void {
    this.conflicts.inc({ group: groupId });
  }

  private registerGauges(registers: Registry[]): void {
    const metrics = this;
    const epoch = new Gauge({ name: 'rsc_coordinator_group_epoch', help: 'Group epoch.', labelNames: ['group'], registers });
    const assignmentEpoch = new Gauge({ name: 'rsc_coordinator_assignment_epoch', help: 'Assignment (target) epoch.', labelNames: ['group'], registers });
    const members = new Gauge({ name: 'rsc_coordinator_members', help: 'Members by reconciliation state.', labelNames: ['group', 'state'], registers });
    const groups = new Gauge({ name: 'rsc_coordinator_groups', help: 'Groups by state.', labelNames: ['state'], registers });
    const shards = new Gauge({
      name: 'rsc_coordinator_shards',
      help: 'Shards of subscribed streams by status: assigned, unassigned, pending_revocation, awaiting_release.',
      labelNames: ['group', 'status'],
      registers,
    });
    new Gauge({
      name: 'rsc_coordinator_scrape_groups',
      help: 'Groups read for this scrape.',
      registers,
      async collect() {
        const source = metrics.source;
        epoch.reset();
        assignmentEpoch.reset();
        members.reset();
        groups.reset();
        shards.reset();
        if (!source) return;
        const all = await source.groups();
        this.set(all.length);
        const groupCounts = Object.fromEntries(GROUP_STATES.map((s) => [s, 0])) as Record<string, number>;
        for (const g of all) {
          const list = [...g.members.values()];
          const gs = groupStateName(g.meta, list, list.length);
          groupCounts[gs] = (groupCounts[gs] ?? 0) + 1;
          epoch.set({ group: g.groupId }, g.meta.groupEpoch);
          assignmentEpoch.set({ group: g.groupId }, g.meta.assignmentEpoch);
          const byState = Object.fromEntries(MEMBER_STATES.map((s) => [s, 0])) as Record<string, number>;
          let assigned = 0;
          let pending = 0;
          let awaiting = 0;
          for (const m of list) {
            const key = m.memberEpoch === -2 ? 'TEMPORARILY_LEFT' : m.state;
            byState[key] = (byState[key] ?? 0) + 1;
            for (const [, ids] of m.assigned) assigned += ids.length;
            for (const [, ids] of m.pendingRevocation) pending += ids.length;
            const target = g.targets.get(m.memberId);
            for (const [stream, shard] of pairs(target ?? new Map())) {
              const owner = g.owners.get(shardRef(stream, shard));
              if (owner && owner.memberId !== m.memberId) awaiting++;
            }
          }
          for (const [state, n] of Object.entries(byState)) members.set({ group: g.groupId, state }, n);
          let total = 0;
          const subscribed = new Set(list.flatMap((m) => m.subscribedStreams));
          for (const stream of subscribed) total += source.catalog.view(g.groupId, stream)?.shards.length ?? 0;
          shards.set({ group: g.groupId, status: 'assigned' }, assigned);
          shards.set({ group: g.groupId, status: 'pending_revocation' }, pending);
          shards.set({ group: g.groupId, status: 'awaiting_release' }, awaiting);
          shards.set({ group: g.groupId, status: 'unassigned' }, Math.max(0, total - assigned - pending));
        }
        for (const [state, n] of Object.entries(groupCounts)) groups.set({ state }, n);
      },
    });
  }
}
