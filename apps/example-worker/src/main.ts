import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { WorkerModule } from './worker.module.js';
import { loadWorkerConfig } from './worker-config.js';

/** Starts the example worker: joins the group, handles `orders`, serves /status on PORT. */
async function main(): Promise<void> {
  const config = loadWorkerConfig();
  const app = await NestFactory.create<NestFastifyApplication>(
    WorkerModule.forConfig(config),
    new FastifyAdapter(),
    {
      logger: ['fatal', 'error', 'warn', 'log'],
    },
  );
  app.enableShutdownHooks();
  await app.listen(config.port, '0.0.0.0');
  new Logger('Worker').log(`worker of group ${config.group} serving on ${await app.getUrl()}`);
}

await main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
