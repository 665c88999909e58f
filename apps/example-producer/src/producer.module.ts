import { type DynamicModule, Module } from '@nestjs/common';
import { StreamCoordinatorModule } from '@redis-stream-coordinator/nestjs';
import { KeyedTrafficService } from './keyed-traffic.service.js';
import { ProducerController } from './producer.controller.js';
import type { ProducerConfig } from './producer-config.js';
import { PRODUCER_CONFIG } from './producer.tokens.js';

/** The example producer: the stream coordinator module in publish-only mode, a keyed publish loop. */
@Module({})
export class ProducerModule {
  /** The module for `config`. */
  static forConfig(config: ProducerConfig): DynamicModule {
    return {
      module: ProducerModule,
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: config.coordinatorUrl,
          token: config.token,
          redis: config.redisUrl,
          // Publish-only: the group is required by the options but never joined.
          group: 'example-producer',
          publishOnly: true,
        }),
      ],
      controllers: [ProducerController],
      providers: [{ provide: PRODUCER_CONFIG, useValue: config }, KeyedTrafficService],
    };
  }
}
