import { type DynamicModule, Module } from '@nestjs/common';
import { StreamCoordinatorModule } from '@redis-stream-coordinator/nestjs';
import { StreamCoordinatorHealthModule } from '@redis-stream-coordinator/nestjs/health';
import { PostgresExactlyOnceModule } from '@redis-stream-coordinator/nestjs/postgres';
import { HealthController } from './health.controller.js';
import { OrdersHandler } from './orders.handler.js';
import type { OrdersConfig } from './orders-config.js';

/**
 * The orders example: joins the group, and writes each `orders` entry into PostgreSQL exactly
 * once. The tables come from the migration (`migrate.js`), not from the app.
 */
@Module({})
export class OrdersModule {
  static forConfig(config: OrdersConfig): DynamicModule {
    return {
      module: OrdersModule,
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: config.coordinatorUrl,
          token: config.token,
          redis: config.redisUrl,
          group: config.group,
        }),
        StreamCoordinatorHealthModule,
        PostgresExactlyOnceModule.forRoot({ connectionString: config.databaseUrl }),
      ],
      controllers: [HealthController],
      providers: [OrdersHandler],
    };
  }
}
