import 'reflect-metadata';
import { startCoordinator } from './bootstrap.js';
import { loadCoordinatorConfig } from './config/coordinator-config.js';
import { InvalidConfigError } from './config/invalid-config.error.js';

/** Entry point: configured by the environment only (PROTOCOL.md §6). */
async function main(): Promise<void> {
  let config;
  try {
    config = loadCoordinatorConfig(process.env);
  } catch (error) {
    if (error instanceof InvalidConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  await startCoordinator(config);
}

await main();
