import { type BeforeApplicationShutdown, Inject, Injectable } from '@nestjs/common';
import type { ReshardDriver } from './reshard-driver.js';
import { RESHARD_DRIVER } from './streams.tokens.js';

/**
 * Runs the {@link ReshardDriver}'s poll loop from the end of the coordinator's start-up (once
 * Redis answered) until shutdown.
 */
@Injectable()
export class ReshardLifecycle implements BeforeApplicationShutdown {
  private stopped = false;

  constructor(@Inject(RESHARD_DRIVER) private readonly driver: ReshardDriver) {}

  /** Starts polling (not once shutdown began). */
  start(): void {
    if (!this.stopped) this.driver.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.driver.stop();
  }
}
