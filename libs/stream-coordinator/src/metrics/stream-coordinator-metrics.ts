import { Counter, Gauge, register as defaultRegistry, type Registry } from 'prom-client';
import { MetricsRegistrationError } from '../errors/metrics/metrics-registration.error.js';
import { BatchedHistogram, type HistogramSeries } from './batched-histogram.js';
import type { MemberRuntime } from '../runtime/member-runtime.js';
import type {
  MemberLifecycleEvents,
  MemberRuntimeEvents,
} from '../runtime/member-runtime-events.js';
import type { GrantedShard } from '../runtime/membership.js';
import {
  HANDLER_DURATION_BUCKETS,
  MEMBER_METRICS,
  type MemberMetricDefinition,
} from './member-metric-definitions.js';
import type { ShardLagSample } from './shard-lag-sampler.js';

/** The member phases `member_phase` reports (one series each). */
const PHASES = [
  'idle',
  'joining',
  'active',
  'self-fenced',
  'failing',
  'leaving',
  'stopped',
] as const;

/** Handled messages of one shard not yet added to the counter, and the shard's labels. */
interface HandledCount {
  readonly labels: { group: string; stream: string; shard: string };
  readonly duration: HistogramSeries;
  pending: number;
}

/**
 * What {@link StreamCoordinatorMetrics} observes.
 *
 * @publicApi
 */
export interface StreamCoordinatorMetricsOptions {
  /** Where to register. Default: prom-client's global registry. */
  readonly registry?: Registry;
  /** Name prefix. Default `stream_coordinator_`. */
  readonly prefix?: string;
  readonly group: string;
  readonly runtime: Pick<MemberRuntime, 'status' | 'readers'>;
  readonly events: MemberRuntimeEvents;
  /** The latest lag/pending samples (see `ShardLagSampler`); none: lag gauges stay empty. */
  readonly lag?: () => ReadonlyMap<string, ShardLagSample>;
}

/**
 * The member-side Prometheus metrics ({@link MEMBER_METRICS}) on a prom-client registry:
 * counters and the handler histogram follow the runtime's events as they happen; gauges (owned
 * and assigned shards, lag, pending, heartbeat age, epoch, phase) are computed when scraped, lag
 * and pending from the latest periodic sample. {@link close} stops listening and unregisters
 * every metric.
 *
 * The module creates one of these itself (option `metrics`, default on, when prom-client is
 * installed); construct one by hand only when the module's metrics are off.
 *
 * @publicApi
 */
export class StreamCoordinatorMetrics {
  /** The registry the metrics live in. */
  readonly registry: Registry;
  /** Full names of the registered metrics. */
  readonly names: readonly string[];
  private readonly unsubscribe: Array<() => void> = [];

  /** @throws MetricsRegistrationError when a metric of the same name is already registered. */
  constructor(options: StreamCoordinatorMetricsOptions) {
    const registry = options.registry ?? defaultRegistry;
    const prefix = options.prefix ?? 'stream_coordinator_';
    this.registry = registry;
    const group = options.group;
    const names = Object.values(MEMBER_METRICS).map((d) => `${prefix}${d.name}`);
    for (const name of names) {
      if (registry.getSingleMetric(name)) {
        throw new MetricsRegistrationError(
          `metric ${name} is already registered: another StreamCoordinatorModule (or the application) uses the same registry and prefix; give this one its own metrics.prefix or metrics.registry`,
        );
      }
    }
    this.names = names;
    const registers = [registry];
    const counter = <L extends string>(
      d: MemberMetricDefinition & { labels: readonly L[] },
    ): Counter<L> =>
      new Counter<L>({
        name: `${prefix}${d.name}`,
        help: d.help,
        labelNames: [...d.labels],
        registers,
      });
    const { runtime } = options;

    // Handled messages, the per-message path: counted per shard here and added to the counter
    // when it is read (its collect); the handler histogram's series looked up once per shard.
    const shardKey = (shard: { stream: string; shard: number }): string =>
      `${shard.stream}\u0000${shard.shard}`;
    const handledCounts = new Map<string, HandledCount>();
    const countOf = new WeakMap<GrantedShard, HandledCount>();
    // (registered by construction; only its collect adds to it)
    const handled = new Counter<'group' | 'stream' | 'shard'>({
      name: `${prefix}${MEMBER_METRICS.messagesHandled.name}`,
      help: MEMBER_METRICS.messagesHandled.help,
      labelNames: [...MEMBER_METRICS.messagesHandled.labels],
      registers,
      collect() {
        for (const count of handledCounts.values()) {
          if (count.pending === 0) continue;
          this.inc(count.labels, count.pending);
          count.pending = 0;
        }
      },
    });
    const duration = new BatchedHistogram(
      `${prefix}${MEMBER_METRICS.handlerDuration.name}`,
      MEMBER_METRICS.handlerDuration.help,
      MEMBER_METRICS.handlerDuration.labels,
      HANDLER_DURATION_BUCKETS,
      registry,
    );
    const handledCountOf = (shard: GrantedShard): HandledCount => {
      const id = shardKey(shard);
      let count = handledCounts.get(id);
      if (count === undefined) {
        count = {
          labels: { group, stream: shard.stream, shard: String(shard.shard) },
          duration: duration.seriesFor({ group, stream: shard.stream }),
          pending: 0,
        };
        handledCounts.set(id, count);
      }
      countOf.set(shard, count);
      return count;
    };
    this.unsubscribe.push(
      options.events.onHandled((shard, durationMs) => {
        const count = countOf.get(shard) ?? handledCountOf(shard);
        count.pending++;
        duration.observe(count.duration, durationMs / 1000);
      }),
    );
    const failures = counter(MEMBER_METRICS.handlerFailures);
    const retries = counter(MEMBER_METRICS.retries);
    const deadLettered = counter(MEMBER_METRICS.deadLettered);
    const dropped = counter(MEMBER_METRICS.dropped);
    const lost = counter(MEMBER_METRICS.shardsLost);
    const readerErrors = counter(MEMBER_METRICS.readerErrors);
    const assignmentChanges = counter(MEMBER_METRICS.assignmentChanges);
    const fenced = counter(MEMBER_METRICS.fenced);

    // The reasons a shard's dead-letter / drop series were counted with (to remove them all).
    const reasonsOf = new Map<string, Set<string>>();
    /** A shard this member no longer holds: its series go (a later grant starts them anew). */
    const forget = (shard: GrantedShard): void => {
      const id = shardKey(shard);
      const labels = { group, stream: shard.stream, shard: String(shard.shard) };
      handledCounts.delete(id);
      handled.remove(labels);
      failures.remove(labels);
      retries.remove(labels);
      for (const reason of reasonsOf.get(id) ?? []) {
        deadLettered.remove({ ...labels, reason });
        dropped.remove({ ...labels, reason });
      }
      reasonsOf.delete(id);
    };
    this.unsubscribe.push(
      options.events.onActivity(
        (a) => {
          const labels = { group, stream: a.shard.stream, shard: String(a.shard.shard) };
          if (a.failed) failures.inc(labels);
          if (a.retried) retries.inc(labels);
          if (a.deadLettered) {
            const reason = a.deadLettered.reason;
            const id = shardKey(a.shard);
            let reasons = reasonsOf.get(id);
            if (reasons === undefined) reasonsOf.set(id, (reasons = new Set()));
            reasons.add(reason);
            (a.deadLettered.written ? deadLettered : dropped).inc({ ...labels, reason });
          }
          if (a.lost) lost.inc({ group, stream: a.shard.stream });
          if (a.watchdog) readerErrors.inc({ group, stream: a.shard.stream, kind: 'watchdog' });
          if (a.connectionError)
            readerErrors.inc({ group, stream: a.shard.stream, kind: 'connection' });
        },
        { handled: false, acked: false }, // acks are not counted
      ),
      options.events.onLifecycle((type, data) => {
        if (type === 'released') forget((data as MemberLifecycleEvents['released']).shard);
        else if (type === 'assignment') assignmentChanges.inc({ group });
        else if (type === 'fenced') fenced.inc({ group, cause: 'coordinator' });
        else if (type === 'self-fenced') fenced.inc({ group, cause: 'self' });
      }),
    );

    const gauge = <L extends string>(
      d: MemberMetricDefinition & { labels: readonly L[] },
      collect: (g: Gauge<L>) => void,
    ): Gauge<L> =>
      new Gauge<L>({
        name: `${prefix}${d.name}`,
        help: d.help,
        labelNames: [...d.labels],
        registers,
        collect() {
          this.reset();
          collect(this);
        },
      });
    const perStream = (items: ReadonlyArray<{ stream: string }>): Map<string, number> => {
      const out = new Map<string, number>();
      for (const i of items) out.set(i.stream, (out.get(i.stream) ?? 0) + 1);
      return out;
    };
    gauge(MEMBER_METRICS.ownedShards, (g) => {
      const held = runtime
        .readers()
        .filter((r) => !r.stopping && r.reader.status !== 'lost' && r.reader.status !== 'stopped');
      for (const [stream, n] of perStream(held.map((r) => r.shard))) g.set({ group, stream }, n);
    });
    gauge(MEMBER_METRICS.assignedShards, (g) => {
      for (const [stream, n] of perStream(runtime.status().assigned)) g.set({ group, stream }, n);
    });
    const lagValues = options.lag ?? ((): ReadonlyMap<string, ShardLagSample> => new Map());
    // (samples of the held shards only: one released since the last sample has no series)
    const heldSamples = (): ShardLagSample[] => {
      const held = new Set(runtime.status().held.map(shardKey));
      return [...lagValues().values()].filter((s) => held.has(shardKey(s)));
    };
    gauge(MEMBER_METRICS.shardLag, (g) => {
      for (const s of heldSamples()) {
        if (s.lag !== null) g.set({ group, stream: s.stream, shard: String(s.shard) }, s.lag);
      }
    });
    gauge(MEMBER_METRICS.shardPending, (g) => {
      for (const s of heldSamples())
        g.set({ group, stream: s.stream, shard: String(s.shard) }, s.pending);
    });
    gauge(MEMBER_METRICS.heartbeatAge, (g) => {
      const at = runtime.status().lastHeartbeatOkAt;
      if (at !== null) g.set({ group }, Math.max(0, performance.now() - at) / 1000);
    });
    gauge(MEMBER_METRICS.memberEpoch, (g) => {
      g.set({ group }, runtime.status().memberEpoch);
    });
    gauge(MEMBER_METRICS.memberPhase, (g) => {
      const phase = runtime.status().phase;
      for (const p of PHASES) g.set({ group, phase: p }, p === phase ? 1 : 0);
    });
  }

  /** Stops following the runtime and removes every metric from the registry. Idempotent. */
  close(): void {
    for (const stop of this.unsubscribe.splice(0)) stop();
    for (const name of this.names) {
      if (this.registry.getSingleMetric(name)) this.registry.removeSingleMetric(name);
    }
  }
}
