import 'reflect-metadata';
import { ConsoleLogger, Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { WorkerModule } from './worker.module.js';
import { loadWorkerConfig } from './worker-config.js';

/** Starts the example worker: joins the group, handles `orders`, serves /status on PORT. */
async function main(): Promise<void> {
  const config = loadWorkerConfig();
  // pg is loaded only in the exactly-once mode
  const handlers =
    config.exactlyOnceDatabaseUrl === undefined
      ? undefined
      : (await import('./exactly-once/exactly-once-handlers.js')).exactlyOnceHandlers(config);
  const app = await NestFactory.create<NestFastifyApplication>(
    WorkerModule.forConfig(config, handlers),
    new FastifyAdapter(),
    {
      logger: new ConsoleLogger({
        logLevels: ['fatal', 'error', 'warn', 'log'],
        json: config.logFormat === 'json',
      }),
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
