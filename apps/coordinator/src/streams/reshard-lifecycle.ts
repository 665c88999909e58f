import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import type { ReshardDriver } from './reshard-driver.js';
import { RESHARD_DRIVER } from './streams.tokens.js';

/** Runs the {@link ReshardDriver}'s poll loop while the application is up. */
@Injectable()
export class ReshardLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  constructor(@Inject(RESHARD_DRIVER) private readonly driver: ReshardDriver) {}

  onApplicationBootstrap(): void {
    this.driver.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.driver.stop();
  }
}
