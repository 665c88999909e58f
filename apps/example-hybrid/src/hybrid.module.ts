import { type DynamicModule, Module } from '@nestjs/common';
import { ClientsModule } from '@nestjs/microservices';
import {
  StreamCoordinatorClientProxy,
  type StreamCoordinatorTransport,
} from '@redis-stream-coordinator/nestjs/microservices';
import { HandledOrders } from './handled-orders.js';
import type { HybridConfig } from './hybrid-config.js';
import { ORDERS_CLIENT } from './hybrid.tokens.js';
import { OrdersEventsController } from './orders-events.controller.js';
import { OrdersHttpController } from './orders-http.controller.js';

/** The hybrid app: HTTP controllers and `@EventPattern` handlers in one Nest application. */
@Module({})
export class HybridModule {
  /** The module for `transport` (the one `main.ts` connects): its drain runs first on shutdown. */
  static forTransport(transport: StreamCoordinatorTransport, config: HybridConfig): DynamicModule {
    return {
      module: HybridModule,
      imports: [
        transport.drainModule(),
        ClientsModule.register([
          {
            name: ORDERS_CLIENT,
            customClass: StreamCoordinatorClientProxy,
            options: config.coordinator,
          },
        ]),
      ],
      controllers: [OrdersHttpController, OrdersEventsController],
      providers: [HandledOrders],
    };
  }
}
