import { MEMBER_METRICS } from '@redis-stream-coordinator/nestjs/metrics';
import { groupFigures } from '@redis-stream-coordinator/nestjs/metrics';
import { register as defaultRegistry, Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  parsePrometheusText,
  type PromFamily,
  sampleValue,
} from '../coordinator/support/prometheus-text.js';
import { CoordinatorProcess } from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { type ObservedMember, startObservedMember } from './support/observed-member.js';
import { pollUntil } from '../support/wait.js';

const P = 'stream_coordinator_';

/** Sum of every sample of `name` whose labels include `labels`. */
function total(
  m: Map<string, PromFamily>,
  name: string,
  labels: Record<string, string> = {},
): number {
  const family = m.get(name) ?? m.get(name.replace(/_(count|sum|bucket)$/, ''));
  return (family?.samples ?? [])
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}

describe('member metrics (prom-client)', () => {
  const redis = useRedisPrefix('member-metrics');
  let coordinator: CoordinatorProcess;
  let member: ObservedMember | undefined;
  let n = 0;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '10000' },
    });
  });
  afterEach(async () => {
    await member?.close();
    member = undefined;
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  async function start(
    extra: Partial<Parameters<typeof startObservedMember>[0]>,
  ): Promise<ObservedMember> {
    n++;
    member = await startObservedMember({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group: `g-metrics-${n}`,
      memberId: `m-${n}`,
      ...extra,
    });
    await pollUntil(
      () => Promise.resolve(member?.runtime.status().held.length ?? 0),
      (h) => h === 2,
      { timeoutMs: 20_000, message: 'two shards held' },
    );
    return member;
  }

  it("joins the app's registry: every documented family, bounded labels, values that add up", async () => {
    const registry = new Registry();
    const m = await start({
      module: { metrics: { registry, sampleIntervalMs: 200 } },
      handle: async (message) => {
        if (message.key.startsWith('bad')) throw new Error(`refusing ${message.key}`);
      },
      maxDeliveries: 3,
    });
    const group = m.runtime.status().group;
    for (let i = 0; i < 10; i++) await m.producer.publish('orders', `good${i}`, { seq: i });
    for (let i = 0; i < 2; i++) await m.producer.publish('orders', `bad${i}`, { seq: i });
    const scrape = async (): Promise<Map<string, PromFamily>> =>
      parsePrometheusText(await registry.metrics());
    const done = await pollUntil(
      scrape,
      (s) =>
        total(s, `${P}messages_handled_total`) === 10 &&
        total(s, `${P}messages_dead_lettered_total`) === 2,
      { timeoutMs: 20_000, message: 'every message settled' },
    );

    for (const d of Object.values(MEMBER_METRICS)) {
      const family = done.get(`${P}${d.name}`);
      expect({ name: d.name, type: family?.type, help: family?.help }).toEqual({
        name: d.name,
        type: d.type,
        help: d.help,
      });
      for (const s of family?.samples ?? []) {
        const allowed = d.type === 'histogram' ? [...d.labels, 'le'] : d.labels;
        for (const label of Object.keys(s.labels))
          expect(allowed, `${s.name} label ${label}`).toContain(label);
      }
    }
    expect(total(done, `${P}handler_failures_total`, { group, stream: 'orders' })).toBe(6);
    expect(total(done, `${P}message_retries_total`, { group })).toBe(4);
    expect(
      total(done, `${P}messages_dead_lettered_total`, { group, reason: 'max-deliveries' }),
    ).toBe(2);
    expect(total(done, `${P}messages_dropped_total`)).toBe(0);
    expect(
      sampleValue(done, `${P}handler_duration_seconds_count`, { group, stream: 'orders' }),
    ).toBe(10);
    expect(
      total(done, `${P}messages_handled_total`, { group, stream: 'orders', shard: '0' }) +
        total(done, `${P}messages_handled_total`, { shard: '1' }),
    ).toBe(10);
    expect(sampleValue(done, `${P}owned_shards`, { group, stream: 'orders' })).toBe(2);
    expect(sampleValue(done, `${P}assigned_shards`, { group, stream: 'orders' })).toBe(2);
    expect(sampleValue(done, `${P}member_epoch`, { group })).toBe(m.runtime.status().memberEpoch);
    expect(sampleValue(done, `${P}member_phase`, { group, phase: 'active' })).toBe(1);
    expect(total(done, `${P}member_phase`, { group })).toBe(1);
    expect(total(done, `${P}assignment_changes_total`, { group })).toBeGreaterThanOrEqual(1);
    const age = sampleValue(done, `${P}heartbeat_age_seconds`, { group }) ?? -1;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(5);
    // Lag and pending are sampled: once everything is acknowledged, both shards show 0.
    const settled = await pollUntil(
      scrape,
      (s) =>
        ['0', '1'].every(
          (shard) =>
            sampleValue(s, `${P}shard_lag`, { group, stream: 'orders', shard }) === 0 &&
            sampleValue(s, `${P}shard_pending`, { group, stream: 'orders', shard }) === 0,
        ),
      { timeoutMs: 10_000, message: 'lag and pending sampled at 0' },
    );
    expect(settled.get(`${P}shard_lag`)?.samples).toHaveLength(2);
    // Nothing member-side leaked into prom-client's global registry.
    expect(defaultRegistry.getSingleMetric(`${P}messages_handled_total`)).toBeUndefined();
  });

  it('samples per-shard lag and pending from XINFO GROUPS, periodically', async () => {
    const registry = new Registry();
    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const m = await start({
      module: { metrics: { registry, sampleIntervalMs: 200 }, handlerDefaults: { batchSize: 3 } },
      handle: () => gate,
    });
    const group = m.runtime.status().group;
    try {
      for (let i = 0; i < 30; i++) await m.producer.publish('orders', `k${i}`, { seq: i });
      const held = m.runtime.status().held;
      // Stable once each shard's first batch is delivered and its handler hangs.
      const direct = async (): Promise<Record<string, { lag: number | null; pending: number }>> => {
        const out: Record<string, { lag: number | null; pending: number }> = {};
        for (const s of held) {
          const f = groupFigures(await redis.redis().xinfo('GROUPS', s.key), group);
          if (f) out[String(s.shard)] = f;
        }
        return out;
      };
      const figures = await pollUntil(
        direct,
        (f) => Object.values(f).length === 2 && Object.values(f).every((x) => x.pending > 0),
        { timeoutMs: 10_000, message: 'shards delivered a batch and stalled' },
      );
      expect(Object.values(figures).some((x) => (x.lag ?? 0) > 0)).toBe(true);
      const scraped = await pollUntil(
        async () => parsePrometheusText(await registry.metrics()),
        (s) =>
          Object.entries(figures).every(
            ([shard, f]) =>
              sampleValue(s, `${P}shard_pending`, { group, stream: 'orders', shard }) ===
                f.pending &&
              sampleValue(s, `${P}shard_lag`, { group, stream: 'orders', shard }) ===
                (f.lag ?? undefined),
          ),
        { timeoutMs: 5_000, message: 'gauges equal XINFO' },
      );
      expect(total(scraped, `${P}shard_pending`, { group })).toBe(
        Object.values(figures).reduce((a, f) => a + f.pending, 0),
      );
    } finally {
      release?.();
    }
  });

  it('removes the per-shard series of a shard this member no longer holds', async () => {
    const registry = new Registry();
    const m = await start({
      module: { metrics: { registry, sampleIntervalMs: 200 } },
      handle: async (message) => {
        if (message.key.startsWith('bad')) throw new Error(`refusing ${message.key}`);
      },
      maxDeliveries: 2,
    });
    const group = m.runtime.status().group;
    for (let i = 0; i < 20; i++) await m.producer.publish('orders', `good${i}`, { seq: i });
    for (let i = 0; i < 6; i++) await m.producer.publish('orders', `bad${i}`, { seq: i });
    const scrape = async (): Promise<Map<string, PromFamily>> =>
      parsePrometheusText(await registry.metrics());
    const perShard = [
      'messages_handled_total',
      'handler_failures_total',
      'message_retries_total',
      'messages_dead_lettered_total',
      'shard_lag',
      'shard_pending',
    ].map((name) => `${P}${name}`);
    /** Per family: the shards it has series for. */
    const shardsOf = (s: Map<string, PromFamily>): Record<string, string[]> =>
      Object.fromEntries(
        perShard.map((name) => [
          name,
          [...new Set((s.get(name)?.samples ?? []).map((x) => x.labels.shard ?? ''))].sort(),
        ]),
      );
    await pollUntil(
      async () => shardsOf(await scrape()),
      (f) => Object.values(f).every((shards) => shards.join() === '0,1'),
      { timeoutMs: 20_000, message: 'series of both shards in every per-shard family' },
    );
    // a second member joins: one shard is revoked from the first
    const other = await startObservedMember({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group,
      memberId: `m-${n}-b`,
      module: { metrics: { registry: new Registry() } },
    });
    try {
      await pollUntil(
        () => Promise.resolve(m.runtime.status().held.length),
        (h) => h === 1,
        { timeoutMs: 20_000, message: 'one shard moved to the new member' },
      );
      const kept = String(m.runtime.status().held[0]?.shard);
      const after = await pollUntil(
        async () => shardsOf(await scrape()),
        (f) => Object.values(f).every((shards) => shards.join() === kept),
        { timeoutMs: 10_000, message: "the released shard's series removed" },
      );
      expect(Object.values(after).every((shards) => shards.join() === kept)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it("uses prom-client's default registry when none is given, with the prefix, and unregisters on close", async () => {
    const m = await start({ module: { metrics: { prefix: 'myapp_rsc_' } } });
    expect(defaultRegistry.getSingleMetric('myapp_rsc_messages_handled_total')).toBeDefined();
    const text = await defaultRegistry.metrics();
    expect(
      sampleValue(parsePrometheusText(text), 'myapp_rsc_owned_shards', {
        group: m.runtime.status().group,
        stream: 'orders',
      }),
    ).toBe(2);
    await m.close();
    member = undefined;
    expect(defaultRegistry.getSingleMetric('myapp_rsc_messages_handled_total')).toBeUndefined();
  });
});
