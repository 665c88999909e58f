import { type DynamicModule, Module } from '@nestjs/common';
import type { StreamCoordinatorTransport } from '@redis-stream-coordinator/nestjs/microservices';
import { OrdersController } from './orders.controller.js';

/** The microservice: `@EventPattern` handlers only, no HTTP server. */
@Module({})
export class MicroserviceModule {
  /** The module for `transport` (the one `main.ts` starts): its drain runs first on shutdown. */
  static forTransport(transport: StreamCoordinatorTransport): DynamicModule {
    return {
      module: MicroserviceModule,
      imports: [transport.drainModule()],
      controllers: [OrdersController],
    };
  }
}
