import { type DynamicModule, Module } from '@nestjs/common';
import { StreamCoordinatorModule } from '@redis-stream-coordinator/nestjs';
import { HandledRecorder } from './handled-recorder.js';
import { OrdersHandler } from './orders.handler.js';
import { StatusController } from './status.controller.js';
import { WORKER_CONFIG } from './worker.tokens.js';
import type { WorkerConfig } from './worker-config.js';

/** The example worker: the stream coordinator module, one handler, a status route. */
@Module({})
export class WorkerModule {
  static forConfig(config: WorkerConfig): DynamicModule {
    return {
      module: WorkerModule,
      imports: [
        StreamCoordinatorModule.forRootAsync({
          useFactory: () => ({
            coordinatorUrl: config.coordinatorUrl,
            token: config.token,
            redis: config.redisUrl,
            group: config.group,
            ...(config.memberId ? { memberId: config.memberId } : {}),
            ...(config.instanceId ? { instanceId: config.instanceId } : {}),
            handlerDefaults: { batchSize: config.batchSize, maxDeliveries: config.maxDeliveries },
          }),
        }),
      ],
      controllers: [StatusController],
      providers: [
        { provide: WORKER_CONFIG, useValue: config },
        { provide: HandledRecorder, useValue: new HandledRecorder(config.recordFile) },
        OrdersHandler,
      ],
    };
  }
}
