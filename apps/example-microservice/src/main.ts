import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { StreamCoordinatorTransport } from '@redis-stream-coordinator/nestjs/microservices';
import { loadMicroserviceConfig } from './microservice-config.js';
import { MicroserviceModule } from './microservice.module.js';

/** Starts the microservice example: joins the group and handles `orders` until SIGTERM. */
async function main(): Promise<void> {
  const options = loadMicroserviceConfig();
  const transport = new StreamCoordinatorTransport(options);
  const app = await NestFactory.createMicroservice(MicroserviceModule.forTransport(transport), {
    strategy: transport,
    logger: ['fatal', 'error', 'warn', 'log'],
  });
  app.enableShutdownHooks();
  await app.listen();
  new Logger('Microservice').log(`group ${options.group} joined, handling orders`);
}

// No top-level await: the same sources build as CommonJS too (test/package).
main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
