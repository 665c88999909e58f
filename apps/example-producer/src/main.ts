import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { InvalidProducerConfigError } from './invalid-producer-config.error.js';
import { loadProducerConfig, type ProducerConfig } from './producer-config.js';
import { ProducerModule } from './producer.module.js';

/** Starts the example producer: publishes keyed `orders`, serves health and /status on PORT. */
async function main(): Promise<void> {
  let config: ProducerConfig;
  try {
    config = loadProducerConfig();
  } catch (error) {
    if (!(error instanceof InvalidProducerConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  const app = await NestFactory.create<NestFastifyApplication>(
    ProducerModule.forConfig(config),
    new FastifyAdapter(),
    { logger: ['fatal', 'error', 'warn', 'log'] },
  );
  app.enableShutdownHooks();
  await app.listen(config.port, '0.0.0.0');
  new Logger('Producer').log(
    `publishing to ${config.stream} at ${config.rate === 0 ? 'full speed' : `${config.rate}/s`}; serving on ${await app.getUrl()}`,
  );
}

await main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
