import type { StreamCoordinatorModuleOptions } from '@redis-stream-coordinator/nestjs';

/** The microservice example's settings, all from the environment (see the README's table). */
export function loadMicroserviceConfig(
  env: NodeJS.ProcessEnv = process.env,
): StreamCoordinatorModuleOptions {
  return {
    coordinatorUrl: env.COORDINATOR_URL ?? 'http://127.0.0.1:7400',
    token: env.COORDINATOR_TOKEN,
    redis: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    group: env.GROUP ?? 'example-microservice',
  };
}
