import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { loadOrdersConfig } from './orders-config.js';
import { OrdersModule } from './orders.module.js';

/** Starts the orders example: joins the group, writes `orders` into PostgreSQL exactly once. */
async function main(): Promise<void> {
  const config = loadOrdersConfig();
  const app = await NestFactory.create<NestFastifyApplication>(
    OrdersModule.forConfig(config),
    new FastifyAdapter(),
    { logger: ['fatal', 'error', 'warn', 'log'] },
  );
  app.enableShutdownHooks();
  await app.listen(config.port, '0.0.0.0');
  new Logger('Orders').log(
    `group ${config.group} writing orders, serving on ${await app.getUrl()}`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
