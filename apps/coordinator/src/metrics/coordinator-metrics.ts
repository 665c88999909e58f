import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { GroupCoordinatorObserver } from '../core/group-coordinator-observer.js';
import type { GroupState } from '../core/group-state.js';
import type { GroupTransaction } from '../core/group-transaction.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import { GROUP_GAUGE_STATES, groupGaugeValues } from './group-gauges.js';

/** Where the gauges read group state from at scrape time. */
export interface GroupStateSource {
  /** Every group, read authoritatively. */
  groups(): Promise<GroupState[]>;
  readonly catalog: StreamCatalog;
}

/** The gauges computed from group state at scrape time. */
interface GroupGauges {
  readonly epoch: Gauge<'group'>;
  readonly assignmentEpoch: Gauge<'group'>;
  readonly members: Gauge<'group' | 'state'>;
  readonly groups: Gauge<'state'>;
  readonly shards: Gauge<'group' | 'status'>;
  readonly withoutAssignment: Gauge<'group'>;
  readonly scraped: Gauge;
}

/**
 * The coordinator metrics of docs/protocol.md §15.2, on the app's own prom-client registry (never
 * the global default one). Gauges are computed from authoritative group state when scraped;
 * counters and histograms are updated as requests are served. Label cardinality is bounded by the
 * number of groups (and assignors); no member ids or shard ids are used as labels.
 */
export class CoordinatorMetrics implements GroupCoordinatorObserver {
  private source: GroupStateSource | null = null;
  readonly heartbeats: Counter<'group' | 'outcome'>;
  readonly heartbeatDuration: Histogram;
  readonly rebalances: Counter<'group' | 'reason'>;
  readonly assignorDuration: Histogram<'assignor'>;
  readonly conflicts: Counter<'group'>;
  readonly redisDataLosses: Counter;

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
    this.redisDataLosses = new Counter({
      name: 'rsc_coordinator_redis_data_loss_total',
      help: 'Times this replica found that Redis lost its data (the incarnation marker gone or changed).',
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
        const reason = e.data.reason;
        this.rebalances.inc({
          group: groupId,
          reason: typeof reason === 'string' ? reason : 'unknown',
        });
      }
    }
    for (const run of txn.assignorRuns)
      this.assignorDuration.observe({ assignor: run.assignor }, run.ms / 1000);
  }

  onConflict(groupId: string): void {
    this.conflicts.inc({ group: groupId });
  }

  private registerGauges(registers: Registry[]): void {
    // prom-client reads every metric of a scrape concurrently, so a gauge without a collect()
    // of its own would be serialised before a shared collect() filled it (one scrape stale).
    // Each gauge therefore awaits the same single-flight refresh of the whole group view.
    let refreshing: Promise<void> | null = null;
    const refresh = (): Promise<void> => {
      refreshing ??= this.collectGroups(gauges).finally(() => {
        refreshing = null;
      });
      return refreshing;
    };
    const gauge = <L extends string>(name: string, help: string, labelNames: L[]): Gauge<L> =>
      new Gauge<L>({ name, help, labelNames, registers, collect: refresh });
    const gauges: GroupGauges = {
      epoch: gauge('rsc_coordinator_group_epoch', 'Group epoch.', ['group']),
      assignmentEpoch: gauge('rsc_coordinator_assignment_epoch', 'Assignment (target) epoch.', [
        'group',
      ]),
      members: gauge('rsc_coordinator_members', 'Members by reconciliation state.', [
        'group',
        'state',
      ]),
      groups: gauge('rsc_coordinator_groups', 'Groups by state.', ['state']),
      shards: gauge(
        'rsc_coordinator_shards',
        'Shards of subscribed streams by status: assigned, unassigned, pending_revocation, awaiting_release.',
        ['group', 'status'],
      ),
      withoutAssignment: gauge(
        'rsc_coordinator_members_without_assignment',
        'Members owning no shard (static members away not counted).',
        ['group'],
      ),
      scraped: gauge('rsc_coordinator_scrape_groups', 'Groups read for this scrape.', []),
    };
  }

  /** Recomputes every group gauge from authoritative state (one pass per scrape). */
  private async collectGroups(g: GroupGauges): Promise<void> {
    const source = this.source;
    const all = source ? await source.groups() : [];
    g.epoch.reset();
    g.assignmentEpoch.reset();
    g.members.reset();
    g.groups.reset();
    g.shards.reset();
    g.withoutAssignment.reset();
    g.scraped.set(all.length);
    if (!source) return;
    const groupCounts = Object.fromEntries(GROUP_GAUGE_STATES.map((s) => [s, 0])) as Record<
      string,
      number
    >;
    for (const group of all) {
      const v = groupGaugeValues(group, source.catalog);
      groupCounts[v.state] = (groupCounts[v.state] ?? 0) + 1;
      g.epoch.set({ group: v.group }, v.groupEpoch);
      g.assignmentEpoch.set({ group: v.group }, v.assignmentEpoch);
      for (const [state, n] of Object.entries(v.members))
        g.members.set({ group: v.group, state }, n);
      for (const [status, n] of Object.entries(v.shards))
        g.shards.set({ group: v.group, status }, n);
      g.withoutAssignment.set({ group: v.group }, v.membersWithoutAssignment);
    }
    for (const [state, n] of Object.entries(groupCounts)) g.groups.set({ state }, n);
  }
}
