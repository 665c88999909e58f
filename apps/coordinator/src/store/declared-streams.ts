import type { DeclaredStream } from '../config/coordinator-config.js';
import { activeShardIds, type StreamRecord } from '../core/streams/stream-record.js';
import type { StreamRegistry } from './stream-registry.js';

/** Minimal logger (Nest's `Logger` fits). */
interface DeclaredStreamsLogger {
  warn(message: string): void;
}

/** What the coordinator knows of Redis losing data (its data-loss watcher). */
export interface DeclaredStreamsLossHooks {
  /** Checks the incarnation marker, restoring the catalog when Redis lost its data. */
  detectLoss(): Promise<void>;
  /** The last record the coordinator saw of `stream`, or `undefined` for one it never saw. */
  remembered(stream: string): StreamRecord | undefined;
}

/** For a coordinator without a data-loss watcher (tests): nothing is known. */
const NO_LOSS_HOOKS: DeclaredStreamsLossHooks = {
  detectLoss: () => Promise.resolve(),
  remembered: () => undefined,
};

/**
 * The `STREAMS` of the configuration: declared at start, and declared again whenever Redis turns
 * out to have lost them (a FLUSHALL, a restart without its data, an eviction) — checked (one
 * HMGET) whenever the coordinator's lifecycle checks Redis's data, so producers and members get their
 * streams back without a coordinator restart. Creating is idempotent across replicas (a
 * compare-and-set on "does not exist"), so several replicas noticing at once create it once.
 *
 * A stream only goes missing when Redis lost data, so a missing one first has the marker checked
 * again (a FLUSHALL landing between the lifecycle's marker check and this one is then the loss it
 * is, its catalog restored and counted); and one the coordinator saw before is restored like the
 * rest of the catalog (docs/protocol.md §13.6: its last layout under the next routing epoch),
 * never created afresh at epoch 1, which would undo a reshard and take its epoch backwards.
 */
export class DeclaredStreams {
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly registry: StreamRegistry,
    private readonly streams: readonly DeclaredStream[],
    private readonly now: () => number,
    private readonly logger: DeclaredStreamsLogger,
    private readonly loss: DeclaredStreamsLossHooks = NO_LOSS_HOOKS,
  ) {}

  /**
   * Creates every declared stream that does not exist (warns when one exists with another count);
   * one this replica saw before (Redis lost it while the start-up retried) is restored instead.
   */
  async declare(): Promise<void> {
    const missing = await this.missingAfterLossCheck();
    for (const declared of this.streams) {
      await this.declareOne(declared, missing.has(declared.stream));
    }
  }

  /** Declares again the streams Redis lost; single flight, never throws (logs instead). */
  check(): Promise<void> {
    if (this.stopped || this.streams.length === 0) return Promise.resolve();
    this.running ??= this.redeclareMissing()
      .catch((error: unknown) => this.logger.warn(`STREAMS check failed: ${String(error)}`))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  /** Stops checking and waits for a check in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async redeclareMissing(): Promise<void> {
    const missing = await this.missingAfterLossCheck();
    if (missing.size === 0) return;
    for (const name of missing) {
      const next = this.loss.remembered(name)
        ? 'restoring its last layout under the next routing epoch'
        : 'declaring it again';
      this.logger.warn(
        `STREAMS: ${name} is missing from Redis (data lost: FLUSHALL, a restart without persistence, eviction?); ${next}`,
      );
    }
    await this.registry.refresh();
    for (const declared of this.streams) {
      if (!missing.has(declared.stream) || this.stopped) continue;
      await this.declareOne(declared, true);
    }
  }

  /**
   * The declared streams Redis does not have. Only a loss removes one, so when one is missing the
   * marker is checked again first: a loss since the lifecycle's last check is then detected as
   * one, and its catalog restored, before anything is declared.
   */
  private async missingAfterLossCheck(): Promise<Set<string>> {
    const names = this.streams.map((s) => s.stream);
    if ((await this.registry.missing(names)).length === 0) return new Set();
    await this.loss.detectLoss();
    return new Set(await this.registry.missing(names));
  }

  /**
   * Declares one stream: a missing one this replica saw before is restored (its last layout under
   * the next routing epoch), any other created unless it exists. Warns when the stream ends up with
   * another count than declared (another replica, declaring it with a different `STREAMS`, won the
   * race to recreate it; a reshard changed it). When another replica wrote it back first from an
   * older memory, the data-loss watcher warns, as it sees the record.
   */
  private async declareOne({ stream, shards }: DeclaredStream, missing: boolean): Promise<void> {
    const known = missing ? this.loss.remembered(stream) : undefined;
    if (known !== undefined) {
      const record = await this.registry.restore(known, this.now());
      const count = activeShardIds(record).length;
      if (record.routingEpoch > known.routingEpoch && count !== shards) {
        this.logger.warn(
          `STREAMS declares ${stream}:${shards} but it had ${count} shard(s) before Redis lost it; restored with ${count} (use the reshard route to change it)`,
        );
      }
      return;
    }
    const result = await this.registry.create(stream, shards, this.now());
    if (result.status !== 'conflict') return;
    this.logger.warn(
      `STREAMS declares ${stream}:${shards} but it exists with ${activeShardIds(result.record).length} shard(s); keeping it (use the reshard route to change it)`,
    );
  }
}
