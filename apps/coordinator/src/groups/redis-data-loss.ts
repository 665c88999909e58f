import { activeShardIds, type StreamRecord } from '../core/streams/stream-record.js';
import type { IncarnationMarker } from '../store/incarnation-marker.js';
import type { StreamRegistry } from '../store/stream-registry.js';

/** What readiness and the metrics say about Redis losing its data. */
export interface RedisDataLossStatus {
  /** Losses detected since this process started. */
  readonly losses: number;
  /** When the last one was detected (ms since epoch), or null. */
  readonly lastDetectedAt: number | null;
  /** Streams created again after the last one. */
  readonly restoredStreams: readonly string[];
}

/** What the watcher does besides restoring the catalog. */
export interface RedisDataLossHooks {
  /** Forgets every cached group (their state in Redis is gone too). */
  dropCache(): void;
  /** Counts one loss (the metric). */
  counted(): void;
  error(message: string): void;
  warn(message: string): void;
  now(): number;
}

/**
 * Detects that Redis lost its data (docs/protocol.md §13.6) and restores what the coordinator can:
 * every stream it had in its catalog comes back with the same number of shards under the next
 * routing epoch, so producers and groups recover without a restart. The messages, the groups'
 * state and acks, and the event logs cannot come back. Checks are single flight and never throw
 * (a failed check is warned about once until one succeeds, not once per interval).
 */
export class RedisDataLossWatcher {
  private readonly remembered = new Map<string, StreamRecord>();
  /** Records of the last loss not restored yet (a restore failed): retried at every check. */
  private readonly unrestored = new Map<string, StreamRecord>();
  private running: Promise<void> | null = null;
  private lastFailure: string | null = null;
  private state: RedisDataLossStatus = { losses: 0, lastDetectedAt: null, restoredStreams: [] };

  constructor(
    private readonly marker: IncarnationMarker,
    private readonly registry: StreamRegistry,
    private readonly hooks: RedisDataLossHooks,
  ) {
    registry.onLoaded((records) => this.remember(records));
  }

  get status(): RedisDataLossStatus {
    return this.state;
  }

  /** The last record of `stream` this coordinator saw, or `undefined` for one it never saw. */
  lastSeen(stream: string): StreamRecord | undefined {
    return this.remembered.get(stream);
  }

  /**
   * At start, before the catalog is loaded (each load is remembered): adopts the marker, so a loss
   * after it is detected even when it happens while the coordinator starts.
   */
  async start(): Promise<void> {
    await this.marker.adopt();
    this.remember(this.registry.list());
  }

  /** Checks the marker; restores the remembered catalog when Redis lost its data. */
  check(): Promise<void> {
    this.running ??= this.checkOnce()
      .then(() => {
        this.lastFailure = null;
      })
      .catch((error: unknown) => {
        // Once per outage, not once per interval.
        const message = `Redis data-loss check failed: ${String(error)}`;
        if (message !== this.lastFailure) this.hooks.warn(message);
        this.lastFailure = message;
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async checkOnce(): Promise<void> {
    if (await this.marker.lostSinceLastCheck()) {
      this.hooks.counted();
      this.hooks.error(
        'Redis lost its data (the incarnation marker is gone or changed: ' +
          'a FLUSHALL, a restart without persistence or from an older snapshot, an eviction). ' +
          `Restoring ${this.remembered.size} stream(s) of the catalog; their messages, the groups' state and ` +
          'acks and the event logs are lost (docs/operations.md, "Redis lost data")',
      );
      this.hooks.dropCache();
      this.state = {
        losses: this.state.losses + 1,
        lastDetectedAt: this.hooks.now(),
        restoredStreams: [],
      };
      for (const [stream, record] of this.remembered) this.unrestored.set(stream, record);
    }
    try {
      if (this.unrestored.size > 0) await this.restoreRemembered();
    } finally {
      await this.registry.settleUnwritten(this.hooks.now());
    }
  }

  /**
   * Restores every remembered stream of the last loss that Redis still lacks. A stream whose
   * restore fails stays to restore and is tried again at the next check (the marker no longer
   * says anything was lost by then); the others go on.
   */
  private async restoreRemembered(): Promise<void> {
    await this.registry.refresh();
    const failures: string[] = [];
    for (const [stream, record] of Array.from(this.unrestored)) {
      const stored = this.registry.get(stream);
      if (stored) {
        this.unrestored.delete(stream);
        this.kept(record, stored);
        continue;
      }
      try {
        const now = await this.registry.restore(record, this.hooks.now());
        this.unrestored.delete(stream);
        this.kept(record, now);
      } catch (error) {
        failures.push(`${stream} (${String(error)})`);
      }
    }
    if (failures.length > 0) {
      throw new Error(
        `could not restore ${failures.join(', ')} after Redis lost its data; retrying at the next check`,
      );
    }
  }

  /** Lists `stream` as restored when what is stored is `lost` under the next routing epoch. */
  private kept(lost: StreamRecord, stored: StreamRecord): void {
    if (stored.routingEpoch === lost.routingEpoch + 1) this.restored(lost.stream);
  }

  /** Lists `stream` as restored after the last loss (by this replica or another). */
  private restored(stream: string): void {
    if (this.state.restoredStreams.includes(stream)) return;
    this.state = { ...this.state, restoredStreams: [...this.state.restoredStreams, stream].sort() };
  }

  /**
   * Adds what the catalog holds now to what is remembered. Streams are never deleted, so every
   * stream ever seen is remembered; a stream seen again replaces its older record (a reshard, a
   * restore), and a load that found it gone (a loss not yet detected) changes nothing. A record
   * behind the one remembered ({@link isBehind}) is warned about once, as it replaces it.
   */
  private remember(records: readonly StreamRecord[]): void {
    for (const record of records) {
      const seen = this.remembered.get(record.stream);
      if (seen !== undefined && isBehind(record, seen)) this.warnBehind(record, seen);
      this.remembered.set(record.stream, record);
    }
  }

  private warnBehind(stored: StreamRecord, seen: StreamRecord): void {
    const { stream } = stored;
    const next = stored.resharding
      ? 'the reshard under way goes on from there'
      : 'the reshard route changes its shard count';
    this.hooks.warn(
      `${stream} is stored with routing epoch ${stored.routingEpoch} (${activeShardIds(stored).length} shard(s)), behind what this replica saw (routing epoch ${seen.routingEpoch}, ${activeShardIds(seen).length} shard(s)): it was created again after Redis lost it (by a replica with an older memory, from STREAMS, or with PUT /v1/streams/${stream}), or Redis lost writes (a failover, a restore from a snapshot). Keeping what is stored, which producers and members follow; ${next} (docs/operations.md, "Redis lost data")`,
    );
  }
}

/**
 * Whether `stored` is behind `seen`: a lower routing epoch, or the same with other active shards.
 * A reshard and a restore only raise the epoch, so one is behind only when the stream was created
 * again (a write-back from an older memory, `STREAMS`, `PUT`) or Redis lost writes.
 */
function isBehind(stored: StreamRecord, seen: StreamRecord): boolean {
  if (stored.routingEpoch !== seen.routingEpoch) return stored.routingEpoch < seen.routingEpoch;
  if (stored.version === seen.version && stored.createdAt === seen.createdAt) return false;
  const ids = (r: StreamRecord) =>
    activeShardIds(r)
      .sort((x, y) => x - y)
      .join();
  return ids(stored) !== ids(seen);
}
