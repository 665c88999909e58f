import type { StreamCoordinatorModuleOptions } from '@redis-stream-coordinator/nestjs';

/** The hybrid example's settings, all from the environment (see the README's table). */
export interface HybridConfig {
  /** What the transport and the client proxy are given. */
  readonly coordinator: StreamCoordinatorModuleOptions;
  /** HTTP port (0 = any free port). */
  readonly port: number;
}

/** Reads the settings; throws with the variable's name on a bad value. */
export function loadHybridConfig(env: NodeJS.ProcessEnv = process.env): HybridConfig {
  const port = Number(env.PORT ?? 7600);
  if (!Number.isInteger(port) || port < 0)
    throw new Error(`PORT must be a non-negative integer (got ${JSON.stringify(env.PORT)})`);
  return {
    coordinator: {
      coordinatorUrl: env.COORDINATOR_URL ?? 'http://127.0.0.1:7400',
      token: env.COORDINATOR_TOKEN,
      redis: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      group: env.GROUP ?? 'example-hybrid',
    },
    port,
  };
}
