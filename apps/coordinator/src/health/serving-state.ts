import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';

/**
 * Whether this replica can serve: up after bootstrap, `down` from the moment shutdown starts.
 * On shutdown it then waits `SHUTDOWN_GRACE_MS` before the HTTP server closes, so a load balancer
 * sees the 503 on `/health/ready` and stops sending traffic first.
 */
@Injectable()
export class ServingState implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Health');
  private serving = false;
  private shuttingDown = false;

  constructor(
    private readonly health: HealthIndicatorService,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  onApplicationBootstrap(): void {
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
    if (!this.serving) return indicator.down({ reason: 'starting' });
    return indicator.up();
  }
}
