import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import { FreshSingleFlight } from '../core/fresh-single-flight.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { type StartupRetryOptions, untilRedisAnswers } from '../redis/redis-startup.js';
import { COORDINATOR_REDIS, COORDINATOR_REDIS_SUBSCRIBER } from '../redis/redis.tokens.js';
import { DeclaredStreams } from '../store/declared-streams.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import type { GroupCoordinator } from './group-coordinator.js';
import { STREAM_REGISTRY } from '../store/store.tokens.js';
import { GROUP_COORDINATOR, REDIS_DATA_LOSS, SESSION_TIMERS } from './groups.tokens.js';
import type { RedisDataLossWatcher } from './redis-data-loss.js';
import type { SessionTimers } from './session-timers.js';

/** Shortest and longest pause between two checks that Redis still has its data. */
const MIN_CHECK_MS = 250;
const MAX_CHECK_MS = 10_000;

/**
 * Starts and stops the coordinator's background work: loads the stream catalog and declares the
 * `STREAMS` of the configuration, follows catalog changes made by other replicas (re-evaluating
 * the groups that subscribe to a changed stream, so they are assigned new shards without waiting
 * for a heartbeat), runs the session/rebalance timers, and restarts every timer when the Redis
 * connection comes back (as Kafka re-arms timers when a coordinator loads). A reconnect also drops
 * every cached group and reloads the stream catalog: the Redis that comes back may have lost its
 * last writes (a restart from an older snapshot, a failover), so nothing cached before is trusted.
 * After every reconnect and every heartbeat interval (bounded to 250 ms … 10 s) it checks that
 * Redis did not lose its data (docs/protocol.md §13.6), restoring the catalog when it did, then
 * declares again the `STREAMS` Redis lost.
 */
@Injectable()
export class CoordinatorLifecycle implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Coordinator');
  private stopped = false;
  private timer: NodeJS.Timeout | null = null;
  private readonly checks = new FreshSingleFlight(async () => {
    if (this.stopped) return;
    await this.dataLoss.check();
    await this.declared.check();
  });
  private readonly declared: DeclaredStreams;

  constructor(
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(COORDINATOR_REDIS_SUBSCRIBER) private readonly subscriber: RedisConnection,
    @Inject(STREAM_REGISTRY) private readonly registry: StreamRegistry,
    @Inject(GROUP_COORDINATOR) private readonly coordinator: GroupCoordinator,
    @Inject(SESSION_TIMERS) private readonly timers: SessionTimers,
    @Inject(REDIS_DATA_LOSS) private readonly dataLoss: RedisDataLossWatcher,
  ) {
    this.declared = new DeclaredStreams(
      registry,
      config.streams,
      () => coordinator.clock.now(),
      this.logger,
      { detectLoss: () => dataLoss.check(), remembered: (stream) => dataLoss.lastSeen(stream) },
    );
  }

  /** A step of the coordinator's start-up: each Redis read retried as `retry` says. */
  async start(retry: StartupRetryOptions): Promise<void> {
    if (this.stopped) return;
    // The marker first: a loss after it (Redis restarting while this start-up retries) is then
    // detected at the first check, and the catalog loaded before the loss is restored.
    await untilRedisAnswers('incarnation marker', () => this.dataLoss.start(), retry);
    await untilRedisAnswers('stream catalog load', () => this.registry.refresh(), retry);
    await untilRedisAnswers('STREAMS declaration', () => this.declared.declare(), retry);
    await untilRedisAnswers(
      'catalog subscription',
      () => this.subscriber.subscribe(this.registry.keys.streamsChangedChannel()),
      retry,
    );
    if (this.stopped) return;
    this.subscriber.on('message', () => void this.onCatalogChanged());
    this.redis.on('ready', () => this.onReconnected());
    this.timers.start();
    const every = Math.min(MAX_CHECK_MS, Math.max(MIN_CHECK_MS, this.config.heartbeatIntervalMs));
    this.timer = setInterval(() => void this.checkRedisData(), every);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.timers.stop();
    await this.declared.stop();
    await this.checks.idle();
  }

  /**
   * Restores what Redis lost (the catalog when its data is gone, then `STREAMS`). A check that
   * started before a reconnect may have read Redis before it restarted, so a call waits for one
   * that starts after it ({@link FreshSingleFlight}).
   */
  private checkRedisData(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return this.checks.run();
  }

  private onReconnected(): void {
    this.coordinator.dropCache();
    this.timers.restartClock();
    if (this.stopped) return;
    // The data check first: it compares the catalog cached before the reconnect with Redis.
    void this.checkRedisData().then(() =>
      this.registry
        .refresh()
        .catch((error: unknown) =>
          this.logger.warn(`catalog reload after a reconnect failed: ${String(error)}`),
        ),
    );
  }

  private async onCatalogChanged(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.registry.refresh();
      for (const [groupId, cached] of this.coordinator.cachedGroups()) {
        if (!cached.exists || cached.state.members.size === 0) continue;
        await this.coordinator.touchMetadata(groupId);
      }
    } catch (error) {
      this.logger.warn(`catalog refresh failed: ${String(error)}`);
    }
  }
}
