import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type BeforeApplicationShutdown,
} from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { untilRedisAnswers } from '../redis/redis-startup.js';
import { COORDINATOR_REDIS, COORDINATOR_REDIS_SUBSCRIBER } from '../redis/redis.tokens.js';
import { DeclaredStreams } from '../store/declared-streams.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import type { GroupCoordinator } from './group-coordinator.js';
import { STREAM_REGISTRY } from '../store/store.tokens.js';
import { GROUP_COORDINATOR, SESSION_TIMERS } from './groups.tokens.js';
import type { SessionTimers } from './session-timers.js';

/**
 * Starts and stops the coordinator's background work: loads the stream catalog and declares the
 * `STREAMS` of the configuration (again whenever Redis lost them), follows catalog changes made
 * by other replicas (re-evaluating the groups that subscribe to a changed stream, so they are
 * assigned new shards without waiting for a heartbeat), runs the session/rebalance timers, and
 * restarts every timer when the Redis connection comes back (as Kafka re-arms timers when a
 * coordinator loads). A reconnect also drops every cached group and reloads the stream catalog:
 * the Redis that comes back may have lost its last writes (a restart from an older snapshot, a
 * failover), so nothing cached before is trusted.
 */
@Injectable()
export class CoordinatorLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Coordinator');
  private stopped = false;
  private readonly declared: DeclaredStreams;

  constructor(
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(COORDINATOR_REDIS_SUBSCRIBER) private readonly subscriber: RedisConnection,
    @Inject(STREAM_REGISTRY) private readonly registry: StreamRegistry,
    @Inject(GROUP_COORDINATOR) private readonly coordinator: GroupCoordinator,
    @Inject(SESSION_TIMERS) private readonly timers: SessionTimers,
  ) {
    this.declared = new DeclaredStreams(
      registry,
      config.streams,
      () => coordinator.clock.now(),
      this.logger,
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    const retry = {
      timeoutMs: this.config.redisStartupTimeoutMs,
      warn: (message: string) => this.logger.warn(message),
    };
    await untilRedisAnswers('stream catalog load', () => this.registry.refresh(), retry);
    await untilRedisAnswers('STREAMS declaration', () => this.declared.declare(), retry);
    await this.subscriber.subscribe(this.registry.keys.streamsChangedChannel());
    this.subscriber.on('message', () => void this.onCatalogChanged());
    this.redis.on('ready', () => this.onReconnected());
    this.timers.start();
    this.declared.start(this.config.heartbeatIntervalMs);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.timers.stop();
    await this.declared.stop();
  }

  private onReconnected(): void {
    this.coordinator.dropCache();
    this.timers.restartClock();
    if (this.stopped) return;
    void this.declared.check();
    this.registry
      .refresh()
      .catch((error: unknown) =>
        this.logger.warn(`catalog reload after a reconnect failed: ${String(error)}`),
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
