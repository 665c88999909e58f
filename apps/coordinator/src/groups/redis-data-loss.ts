import type { StreamRecord } from '../core/streams/stream-record.js';
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
    if (!(await this.marker.lostSinceLastCheck())) return;
    const known = new Map(this.remembered);
    this.hooks.counted();
    this.hooks.error(
      'Redis lost its data (the incarnation marker is gone or changed: ' +
        'a FLUSHALL, a restart without persistence or from an older snapshot, an eviction). ' +
        `Restoring ${known.size} stream(s) of the catalog; their messages, the groups' state and ` +
        'acks and the event logs are lost (docs/operations.md, "Redis lost data")',
    );
    this.hooks.dropCache();
    await this.registry.refresh();
    const restored: string[] = [];
    for (const record of known.values()) {
      if (this.registry.get(record.stream)) continue;
      await this.registry.restore(record, this.hooks.now());
      restored.push(record.stream);
    }
    this.state = {
      losses: this.state.losses + 1,
      lastDetectedAt: this.hooks.now(),
      restoredStreams: restored.sort(),
    };
  }

  /**
   * Adds what the catalog holds now to what is remembered. Streams are never deleted, so every
   * stream ever seen is remembered; a stream seen again replaces its older record (a reshard, a
   * restore), and a load that found it gone (a loss not yet detected) changes nothing.
   */
  private remember(records: readonly StreamRecord[]): void {
    for (const record of records) this.remembered.set(record.stream, record);
  }
}
