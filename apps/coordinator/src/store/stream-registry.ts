import { randomUUID } from 'node:crypto';
import { entryFields } from './event-entry.codec.js';
import type { Cluster, Redis } from 'ioredis';
import { type KeySpace, type StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { runScript } from '@redis-stream-coordinator/nestjs/internal';
import { FreshSingleFlight } from '../core/fresh-single-flight.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import {
  activeShardIds,
  consumableShards,
  newStreamRecord,
  type StreamRecord,
} from '../core/streams/stream-record.js';
import { reshardingStatus } from '../core/streams/reshard-status.js';
import { type OpenOutcome, openShardMeta, type ShardOpener } from './shard-data-plane.js';
import { CATALOG_READ_SCRIPT, STREAM_WRITE_SCRIPT } from './stream-store.scripts.js';
import { type ErrorLog, UnwrittenShardSettler } from './unwritten-shard-settler.js';

const SILENT: ErrorLog = { error: () => undefined };

/** Outcome of `PUT /v1/streams/{stream}`. */
export type CreateStreamResult =
  | { readonly status: 'created' | 'exists'; readonly record: StreamRecord }
  | { readonly status: 'conflict'; readonly record: StreamRecord };

/**
 * The stream catalog: metadata of every logical stream, cached in memory and kept in step with
 * Redis (compare-and-set writes bump a catalog version and publish it; every replica refreshes on
 * the notification, and a group that was computed against a newer catalog forces a refresh before
 * it is processed). Implements the core's {@link StreamCatalog}.
 */
export class StreamRegistry implements StreamCatalog {
  private records = new Map<string, StreamRecord>();
  private shardSets = new Map<string, Set<number>>();
  private readonly views = new Map<
    string,
    {
      recordVersion: number;
      view: { version: string; shards: readonly number[]; resharding: boolean };
    }
  >();
  private loadedVersion = 0;
  private readonly loads = new FreshSingleFlight(() => this.load());
  private readonly loadListeners: Array<(records: readonly StreamRecord[]) => void> = [];
  private readonly settler: UnwrittenShardSettler;

  constructor(
    private readonly redis: Redis | Cluster,
    readonly keys: KeySpace,
    /** Where what it could not repair is reported (Nest's `Logger` fits). */
    log: ErrorLog = SILENT,
  ) {
    this.settler = new UnwrittenShardSettler(
      redis,
      keys,
      (stream) => this.storedRecord(stream),
      log,
    );
  }

  /** The catalog version this replica's cache reflects. */
  get version(): number {
    return this.loadedVersion;
  }

  /** Calls `listener` with every stream record after each load from Redis. */
  onLoaded(listener: (records: readonly StreamRecord[]) => void): void {
    this.loadListeners.push(listener);
  }

  /**
   * Reloads every stream record from Redis, in a load that starts after the call, so the cache
   * then holds every write committed before it: the caller's own write, or another replica's
   * that a GET must show (see {@link FreshSingleFlight}).
   */
  refresh(): Promise<void> {
    return this.loads.run();
  }

  private async load(): Promise<void> {
    // One atomic read: two separate ones could pair old records with a newer version, and the
    // cache would then never be refreshed up to the records it misses.
    const [version, flat] = (await runScript(this.redis, CATALOG_READ_SCRIPT, [
      this.keys.streamsKey(),
      this.keys.catalogVersionKey(),
    ])) as [number, string[]];
    const next = new Map<string, StreamRecord>();
    for (let i = 0; i + 1 < flat.length; i += 2)
      next.set(flat[i] as string, JSON.parse(flat[i + 1] as string) as StreamRecord);
    this.records = next;
    this.shardSets = new Map(
      [...next].map(([name, r]) => [name, new Set(r.shards.map((x) => x.id))]),
    );
    this.views.clear();
    this.loadedVersion = version;
    const records = [...next.values()];
    for (const listener of this.loadListeners) listener(records);
  }

  /** Which of `streams` have no record in Redis now (read from Redis, not from the cache). */
  async missing(streams: readonly string[]): Promise<string[]> {
    if (streams.length === 0) return [];
    const found = await this.redis.hmget(this.keys.streamsKey(), ...streams);
    return streams.filter((_, i) => found[i] === null);
  }

  /** Refreshes when the cache is older than `version`. */
  async ensureAtLeast(version: number): Promise<void> {
    if (version > this.loadedVersion) await this.refresh();
  }

  /** A stream's record, or `undefined`. */
  get(stream: string): StreamRecord | undefined {
    return this.records.get(stream);
  }

  /** Every stream, by name. */
  list(): StreamRecord[] {
    return [...this.records.values()].sort((a, b) => (a.stream < b.stream ? -1 : 1));
  }

  /** Creates a stream with `shards` shards; idempotent for the same count. */
  async create(stream: string, shards: number, now: number): Promise<CreateStreamResult> {
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.refresh();
      const existing = this.records.get(stream);
      if (existing) {
        await this.settler.settle(stream);
        // Idempotent for the count producers write to now (during a reshard: the new count).
        const same = activeShardIds(existing).length === shards;
        return { status: same ? 'exists' : 'conflict', record: existing };
      }
      const record = newStreamRecord(stream, shards, now);
      const events = [{ type: 'STREAM_CREATED', data: { shards } }];
      const opener: ShardOpener = { id: randomUUID(), takeOver: false };
      if (await this.openAndWrite(record, opener, events)) {
        return { status: 'created', record };
      }
    }
    throw new Error(`could not create stream ${stream}: concurrent writers kept winning`);
  }

  /**
   * Creates again a stream Redis lost (docs/protocol.md §13.6): the shards `lost` had active, with
   * their ids and slot ranges, under the next routing epoch (a producer still holding the lost
   * routing puts each key where a refreshed one does; one holding an older routing finds its
   * shards gone); no reshard, nothing else opened; nothing when it exists again. Returns the
   * record now in the catalog.
   */
  async restore(lost: StreamRecord, now: number): Promise<StreamRecord> {
    const ids = activeShardIds(lost);
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.refresh();
      const existing = this.records.get(lost.stream);
      if (existing) {
        await this.settler.settle(lost.stream);
        return existing;
      }
      const record: StreamRecord = {
        ...newStreamRecord(lost.stream, ids.length, now),
        routingEpoch: lost.routingEpoch + 1,
        nextShardId: lost.nextShardId,
        shards: ids.map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
        routing: lost.routing,
      };
      const data = {
        shards: ids.length,
        shardIds: ids,
        routingEpoch: record.routingEpoch,
        reason: 'REDIS_DATA_LOST',
      };
      const opener: ShardOpener = {
        id: randomUUID(),
        origin: 'restored',
        takeOver: false,
      };
      if (await this.openAndWrite(record, opener, [{ type: 'STREAM_CREATED', data }])) {
        return record;
      }
    }
    throw new Error(`could not restore stream ${lost.stream}: concurrent writers kept winning`);
  }

  /**
   * Opens the shards of a new `record` for producers, then writes it if no record exists; false
   * when another replica's record won. Opening first means a producer that sees the record finds
   * its shards open. Each shard opened here records `opener` (and a restore's `origin=restored`,
   * before the record names it, so a `startFrom: 'latest'` group's first acquire still starts at
   * the shard's first entry, docs/protocol.md §12.3); a shard another replica or a reshard opened first stays
   * theirs, and one a reshard closed is not reopened. When the write did not happen (it lost, or
   * a call failed), the shards opened here that the stored record does not name are withdrawn
   * ({@link UnwrittenShardSettler}).
   */
  private async openAndWrite(
    record: StreamRecord,
    opener: ShardOpener,
    events: ReadonlyArray<{
      readonly type: string;
      readonly data: Readonly<Record<string, unknown>>;
    }>,
  ): Promise<boolean> {
    const ids = record.shards.map((s) => s.id);
    // noted durably first: if this replica stops before its write or its settle, another one
    // takes these shards back
    await this.settler.opening({
      opener: opener.id,
      stream: record.stream,
      ids,
      at: record.createdAt,
    });
    // the shards this attempt may have recorded itself as the opener of
    let ours: readonly number[] = ids;
    let written = false;
    try {
      const opens = await Promise.allSettled(
        ids.map((id) => openShardMeta(this.redis, this.keys.shardKey(record.stream, id), opener)),
      );
      // (an open that failed may have run: kept too)
      ours = ids.filter((_, i) => {
        const open = opens[i] as PromiseSettledResult<OpenOutcome>;
        return open.status === 'rejected' || open.value === 'opened';
      });
      const failed = opens.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed) throw failed.reason;
      written = await this.write(record, 0, events);
      return written;
    } finally {
      if (written || ours.length === 0) await this.settler.done(opener.id);
      else this.settler.unwritten(record.stream, ours, opener.id);
      // after a write: withdraws what an earlier attempt opened that this record does not name
      await this.settler.settle(record.stream);
    }
  }

  /**
   * Withdraws the shards creations or restores opened for records they did not write, once a
   * record of their stream is stored: this replica's, and those of replicas that stopped first
   * (docs/protocol.md §13.6). The data-loss watcher calls it at each check.
   */
  settleUnwritten(now: number): Promise<void> {
    return this.settler.settleAll(now);
  }

  /** `stream`'s record as stored now (one HGET, not the cache), or `undefined`. */
  protected async storedRecord(stream: string): Promise<StreamRecord | undefined> {
    const json = await this.redis.hget(this.keys.streamsKey(), stream);
    return json === null ? undefined : (JSON.parse(json) as StreamRecord);
  }

  /**
   * Writes `record` if the stored record is still at `expectedVersion` (0 = must not exist) and
   * appends `events` to the stream's event log in the same atomic step; returns false on a
   * conflict. The cache is refreshed either way.
   */
  async write(
    record: StreamRecord,
    expectedVersion: number,
    events: ReadonlyArray<{
      readonly type: string;
      readonly data: Readonly<Record<string, unknown>>;
    }>,
  ): Promise<boolean> {
    const [ok] = (await runScript(this.redis, STREAM_WRITE_SCRIPT, [
      this.keys.streamsKey(),
      this.keys.catalogVersionKey(),
      this.keys.streamEventsKey(record.stream),
      record.stream,
      expectedVersion,
      JSON.stringify(record),
      JSON.stringify(events.map((e) => [e.type, JSON.stringify(e.data)])),
      this.keys.streamsChangedChannel(),
    ])) as [number, number];
    await this.refresh();
    return ok === 1;
  }

  /** The stream's event log (creation and reshard steps), oldest first. */
  async events(
    stream: string,
    count = 1000,
  ): Promise<Array<{ id: string; type: string; at: number; data: Record<string, unknown> }>> {
    const entries = await this.redis.xrange(
      this.keys.streamEventsKey(stream),
      '-',
      '+',
      'COUNT',
      count,
    );
    return entries.map(([id, fields]) => {
      const f = entryFields(fields);
      return {
        id,
        type: f.type ?? 'UNKNOWN',
        at: Number(f.at ?? 0),
        data: JSON.parse(f.data ?? '{}') as Record<string, unknown>,
      };
    });
  }

  /** The routing body of `GET /v1/streams/{stream}` (docs/protocol.md §8.3). */
  routing(record: StreamRecord): StreamRouting {
    return {
      stream: record.stream,
      routingEpoch: record.routingEpoch,
      shards: activeShardIds(record).map((id) => ({
        id,
        key: this.keys.shardKey(record.stream, id),
      })),
      deadLetterKey: this.keys.deadLetterKey(record.stream),
      routing: record.routing,
      resharding: reshardingStatus(record, (id) => this.keys.shardKey(record.stream, id)),
    };
  }

  // StreamCatalog

  /**
   * The shards `group` may consume now. The view's version is the shard list itself, so a record
   * change that leaves this group's set as it was (another group's drain, a cursor move) does not
   * bump the group's epoch.
   */
  view(
    group: string,
    stream: string,
  ): { version: string; shards: readonly number[]; resharding: boolean } | undefined {
    const record = this.records.get(stream);
    if (!record) return undefined;
    const memo = `${group}\u0000${stream}`;
    const cached = this.views.get(memo);
    if (cached?.recordVersion === record.version) return cached.view;
    const shards = consumableShards(record, group);
    const view = {
      version: `[${shards.join('.')}]`,
      shards,
      resharding: record.resharding !== null,
    };
    this.views.set(memo, { recordVersion: record.version, view });
    return view;
  }

  knows(stream: string, shard: number): boolean {
    return this.shardSets.get(stream)?.has(shard) ?? false;
  }

  shardKey(stream: string, shard: number): string {
    return this.keys.shardKey(stream, shard);
  }
}
