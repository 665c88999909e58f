import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';

/**
 * Whether this replica can serve: `down` while its start-up waits for Redis (with the reason),
 * up once the start-up completed, `down` again from the moment shutdown starts. On shutdown it
 * then waits `SHUTDOWN_GRACE_MS` before the HTTP server closes, so a load balancer sees the 503
 * on `/health/ready` and stops sending traffic first.
 */
@Injectable()
export class ServingState implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Health');
  private serving = false;
  private startingReason = 'starting';
  private shuttingDown = false;

  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  /**
   * Whether the start-up completed. Stays true while shutting down: the routes keep serving
   * during `SHUTDOWN_GRACE_MS`, only readiness turns 503.
   */
  get started(): boolean {
    return this.serving;
  }

  /** Why the start-up has not completed yet (readiness and the 503 of other routes say it). */
  get reason(): string {
    return this.startingReason;
  }

  /** The start-up is waiting for `reason`. */
  waiting(reason: string): void {
    this.startingReason = reason;
  }

  /** The start-up completed: readiness is up from now on. */
  markStarted(): void {
    this.serving = true;
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    if (this.config.shutdownGraceMs > 0) {
      this.logger.log(`readiness is 503; waiting ${this.config.shutdownGraceMs} ms before closing`);
      await new Promise((resolve) => setTimeout(resolve, this.config.shutdownGraceMs));
    }
  }

  check(key: string): HealthIndicatorResult<typeof key> {
    const indicator = this.health.check(key);
    if (this.shuttingDown) return indicator.down({ reason: 'shutting down' });
    if (!this.serving) return indicator.down({ reason: this.startingReason });
    return indicator.up();
  }
}
