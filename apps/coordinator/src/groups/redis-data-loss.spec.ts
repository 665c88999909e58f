import { describe, expect, it } from 'vitest';
import { newStreamRecord, type StreamRecord } from '../core/streams/stream-record.js';
import type { IncarnationMarker } from '../store/incarnation-marker.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import { RedisDataLossWatcher } from './redis-data-loss.js';

/** A catalog in memory with the registry's surface the watcher uses. */
class FakeCatalog {
  stored = new Map<string, StreamRecord>();
  private listeners: Array<(records: readonly StreamRecord[]) => void> = [];
  private cached = new Map<string, StreamRecord>();
  onLoaded(listener: (records: readonly StreamRecord[]) => void): void {
    this.listeners.push(listener);
  }
  refresh(): Promise<void> {
    this.cached = new Map(this.stored);
    for (const l of this.listeners) l([...this.cached.values()]);
    return Promise.resolve();
  }
  list(): StreamRecord[] {
    return [...this.cached.values()];
  }
  get(stream: string): StreamRecord | undefined {
    return this.cached.get(stream);
  }
  settled = 0;
  settleUnwritten(): Promise<void> {
    this.settled++;
    return Promise.resolve();
  }
  /** Streams whose next restore fails (Redis going away mid-restore). */
  failing = new Set<string>();
  restore(lost: StreamRecord, now: number): Promise<StreamRecord> {
    if (this.failing.delete(lost.stream)) return Promise.reject(new Error('Connection is closed.'));
    const record = {
      ...newStreamRecord(lost.stream, lost.shards.length, now),
      routingEpoch: lost.routingEpoch + 1,
    };
    this.stored.set(lost.stream, record);
    return this.refresh().then(() => record);
  }
}

function setUp(lost: () => Promise<boolean>) {
  const catalog = new FakeCatalog();
  const log: string[] = [];
  let counted = 0;
  let dropped = 0;
  const marker = { adopt: () => Promise.resolve('a'), lostSinceLastCheck: lost };
  const watcher = new RedisDataLossWatcher(
    marker as unknown as IncarnationMarker,
    catalog as unknown as StreamRegistry,
    {
      dropCache: () => void dropped++,
      counted: () => void counted++,
      error: (m) => void log.push(`error ${m}`),
      warn: (m) => void log.push(`warn ${m}`),
      now: () => 1000,
    },
  );
  return { catalog, watcher, log, counts: () => ({ counted, dropped }) };
}

describe('RedisDataLossWatcher', () => {
  it('restores every stream ever seen, under the next routing epoch, once the marker is gone', async () => {
    let lost = false;
    const { catalog, watcher, log, counts } = setUp(() => Promise.resolve(lost));
    catalog.stored.set('orders', { ...newStreamRecord('orders', 4, 0), routingEpoch: 3 });
    await catalog.refresh();
    await watcher.start();
    catalog.stored.set('audit', newStreamRecord('audit', 2, 0));
    await catalog.refresh(); // created through the API after start
    catalog.stored.clear();
    await catalog.refresh(); // a reload that found it all gone, before the check
    await watcher.check();
    expect(counts()).toEqual({ counted: 0, dropped: 0 });

    lost = true;
    await watcher.check();
    expect(counts()).toEqual({ counted: 1, dropped: 1 });
    expect(catalog.stored.get('orders')?.routingEpoch).toBe(4);
    expect(catalog.stored.get('orders')?.shards).toHaveLength(4);
    expect(catalog.stored.get('audit')?.routingEpoch).toBe(2);
    expect(watcher.status).toEqual({
      losses: 1,
      lastDetectedAt: 1000,
      restoredStreams: ['audit', 'orders'],
    });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatch(/^error Redis lost its data .*Restoring 2 stream\(s\)/);
  });

  it('goes on past a stream whose restore fails, and restores it at the next check', async () => {
    let lost = false;
    const { catalog, watcher, log, counts } = setUp(() => Promise.resolve(lost));
    catalog.stored.set('audit', newStreamRecord('audit', 2, 0));
    catalog.stored.set('orders', newStreamRecord('orders', 4, 0));
    await catalog.refresh();
    await watcher.start();
    catalog.stored.clear();
    catalog.failing.add('audit');
    lost = true;
    await watcher.check();
    expect(catalog.settled).toBe(1); // also when a restore failed
    lost = false; // the marker was adopted: the next check sees no new loss
    expect(catalog.stored.has('orders')).toBe(true);
    expect(catalog.stored.has('audit')).toBe(false);
    expect(watcher.status).toEqual({
      losses: 1,
      lastDetectedAt: 1000,
      restoredStreams: ['orders'],
    });
    expect(log[1]).toMatch(/^warn .*could not restore audit .*retrying at the next check/);

    await watcher.check();
    expect(catalog.stored.get('audit')?.routingEpoch).toBe(2);
    expect(watcher.status.restoredStreams).toEqual(['audit', 'orders']);
    expect(counts()).toEqual({ counted: 1, dropped: 1 });
    await watcher.check(); // nothing left to do
    expect(log).toHaveLength(2);
  });

  it('warns about a failing check once until a check succeeds', async () => {
    let failing = true;
    const { watcher, log } = setUp(() =>
      failing ? Promise.reject(new Error('Connection is closed.')) : Promise.resolve(false),
    );
    for (let i = 0; i < 5; i++) await watcher.check();
    failing = false;
    await watcher.check();
    failing = true;
    await watcher.check();
    expect(log).toEqual([
      'warn Redis data-loss check failed: Error: Connection is closed.',
      'warn Redis data-loss check failed: Error: Connection is closed.',
    ]);
  });

  it('warns once when a load brings a record behind the one seen, never for a normal step', async () => {
    const { catalog, log } = setUp(() => Promise.resolve(false));
    const at = (epoch: number, shards: number, version = 1): StreamRecord => ({
      ...newStreamRecord('orders', shards, 0),
      routingEpoch: epoch,
      version,
    });
    catalog.stored.set('orders', at(2, 4));
    await catalog.refresh();
    catalog.stored.set('orders', at(2, 4, 2)); // a step that keeps the layout
    await catalog.refresh();
    catalog.stored.set('orders', at(3, 2, 3)); // a reshard's new layout
    await catalog.refresh();
    expect(log).toEqual([]);
    catalog.stored.set('orders', at(2, 4)); // lost writes took it back
    await catalog.refresh();
    await catalog.refresh(); // loaded again: remembered by now, no second warning
    expect(log).toHaveLength(1);
    expect(log[0]).toContain(
      'orders is stored with routing epoch 2 (4 shard(s)), behind what this replica saw (routing epoch 3, 2 shard(s))',
    );
    expect(log[0]).toContain('the reshard route changes its shard count');
    // the same epoch with other shards, with a reshard under way in what is stored
    const preparing = { ...at(2, 3, 9), resharding: { state: 'preparing' } };
    catalog.stored.set('orders', preparing as unknown as StreamRecord);
    await catalog.refresh();
    expect(log).toHaveLength(2);
    expect(log[1]).toContain('the reshard under way goes on from there');
  });
});
