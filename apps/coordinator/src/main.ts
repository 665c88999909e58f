import 'reflect-metadata';
import { loadCoordinatorConfig } from './config/coordinator-config.js';
import { InvalidConfigError } from './config/invalid-config.error.js';
import { LegacyKeyLayoutError } from './key-layout/legacy-key-layout.error.js';
import { RedisUnavailableAtStartError } from './redis/redis-unavailable-at-start.error.js';

/** Prints a problem that is the operator's to fix (no stack trace) and exits 1. */
function refuseToStart(
  error: InvalidConfigError | LegacyKeyLayoutError | RedisUnavailableAtStartError,
): never {
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}

/**
 * Entry point: configured by the environment only (docs/protocol.md §10). The environment is
 * checked before Nest is even loaded, so a bad value stops the process at once; problems only found
 * while the app starts (DEFAULT_ASSIGNOR naming no registered assignor) stop it the same way, and
 * so do those of the start-up that needs Redis, which runs once the server listens (the old key
 * layout found, or Redis silent for longer than a non-zero REDIS_STARTUP_TIMEOUT_MS).
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadCoordinatorConfig(process.env);
  } catch (error) {
    if (error instanceof InvalidConfigError) refuseToStart(error);
    throw error;
  }
  const { startCoordinator } = await import('./bootstrap.js');
  const { CoordinatorStartup } = await import('./coordinator-startup.js');
  try {
    const app = await startCoordinator(config);
    await app.get(CoordinatorStartup).completed();
  } catch (error) {
    if (
      error instanceof InvalidConfigError ||
      error instanceof LegacyKeyLayoutError ||
      error instanceof RedisUnavailableAtStartError
    ) {
      refuseToStart(error);
    }
    throw error;
  }
}

await main();
