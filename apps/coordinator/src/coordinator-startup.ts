import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { COORDINATOR_CONFIG } from './config/config.tokens.js';
import type { CoordinatorConfig } from './config/coordinator-config.js';
import { CoordinatorLifecycle } from './groups/coordinator-lifecycle.js';
import { EvictionPolicyCheck } from './health/eviction-policy.js';
import { ServingState } from './health/serving-state.js';
import { KeyLayoutCheck } from './key-layout/key-layout.check.js';
import type { StartupRetryOptions } from './redis/redis-startup.js';
import { StartupStoppedError } from './redis/startup-stopped.error.js';
import { ReshardLifecycle } from './streams/reshard-lifecycle.js';

/**
 * The part of the coordinator's start that needs Redis, run in the background once the app is
 * initialised, so the HTTP server listens at once (docs/protocol.md §2.7): `/health/live` answers
 * 200, `/health/ready` 503 with the reason, every other route 503 `COORDINATOR_NOT_AVAILABLE`,
 * until it completed. Each step retries while Redis does not answer (backoff with jitter, one log
 * line per attempt, for up to `REDIS_STARTUP_TIMEOUT_MS`; 0 = no limit). In order: the key-layout
 * check, the incarnation marker, the catalog load and `STREAMS`, the timers, the reshard driver.
 */
@Injectable()
export class CoordinatorStartup implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Coordinator');
  private done: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    private readonly keyLayout: KeyLayoutCheck,
    private readonly lifecycle: CoordinatorLifecycle,
    private readonly reshard: ReshardLifecycle,
    private readonly eviction: EvictionPolicyCheck,
    private readonly serving: ServingState,
  ) {}

  /**
   * Resolves once the start-up completed, or when the app shut down while it waited for Redis
   * (no retry outlives `app.close()`); rejects with what stopped it (`LegacyKeyLayoutError`,
   * `RedisUnavailableAtStartError`, a refusal from Redis).
   */
  completed(): Promise<void> {
    return this.done;
  }

  onApplicationBootstrap(): void {
    this.done = this.run();
    // The entry point (main.ts) handles the failure; an embedding app reads it from completed().
    this.done.catch(() => undefined);
  }

  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  private async run(): Promise<void> {
    const retry: StartupRetryOptions = {
      timeoutMs: this.config.redisStartupTimeoutMs,
      warn: (message) => this.logger.warn(message),
      onWaiting: (reason) => this.serving.waiting(reason),
      stopped: () => this.stopping,
    };
    try {
      await this.keyLayout.run(retry);
      await this.lifecycle.start(retry);
      await this.eviction.warnAtStart();
      if (this.stopping) return;
      this.reshard.start();
      this.serving.markStarted();
      this.logger.log('started: Redis answered and the catalog is loaded');
    } catch (error) {
      // Shut down while waiting for Redis: nothing failed, and no retry outlives the app.
      if (error instanceof StartupStoppedError) return;
      this.serving.waiting(
        `start-up failed: ${error instanceof Error ? error.message : String(error)}`,
      );
      throw error;
    }
  }
}
