import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { StreamCoordinatorTransport } from '@redis-stream-coordinator/nestjs/microservices';
import { loadHybridConfig } from './hybrid-config.js';
import { HybridModule } from './hybrid.module.js';

/**
 * Starts the hybrid example: an HTTP app (`POST /orders`, `GET /orders/handled` on PORT) with the
 * stream transport connected, so its `@EventPattern('orders')` handler joins the group.
 */
async function main(): Promise<void> {
  const config = loadHybridConfig();
  const transport = new StreamCoordinatorTransport(config.coordinator);
  const app = await NestFactory.create<NestFastifyApplication>(
    HybridModule.forTransport(transport, config),
    new FastifyAdapter(),
    { logger: ['fatal', 'error', 'warn', 'log'] },
  );
  app.connectMicroservice({ strategy: transport }, { inheritAppConfig: true });
  app.enableShutdownHooks();
  // Returns at once: the member starts in listen(), once every module's onApplicationBootstrap
  // completed (transport.drainModule()), and joins the group in the background.
  await app.startAllMicroservices();
  await app.listen(config.port, '0.0.0.0');
  new Logger('Hybrid').log(
    `group ${config.coordinator.group} joining, serving on ${await app.getUrl()}`,
  );
}

// No top-level await: the same sources build as CommonJS too (test/package).
main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
