import type { StartedRedisContainer } from '@testcontainers/redis';

/** A Redis container started through testcontainers. */
export interface RedisContainerHandle {
  /** `redis://<host>:<mapped port>`. */
  readonly url: string;
  /** Stops and removes the container. */
  stop(): Promise<void>;
}

/** Options of {@link startRedisContainer}. */
export interface RedisContainerOptions {
  /** Image; default `redis:7-alpine`. */
  image?: string;
  /** Bound on finding a container runtime; default 5 s. */
  detectTimeoutMs?: number;
  /** Bound on pulling and starting the container; default 180 s. */
  startTimeoutMs?: number;
}

/**
 * Starts Redis in a container when a Docker-compatible engine is reachable. Resolves with the
 * reason as a string when there is none (so the caller can try the next fallback); both the
 * engine lookup and the start are bounded in time. testcontainers' reaper removes the container
 * if this process dies before `stop()`.
 */
export async function startRedisContainer(
  options: RedisContainerOptions = {},
): Promise<RedisContainerHandle | string> {
  const image = options.image ?? 'redis:7-alpine';
  let testcontainers: typeof import('testcontainers');
  try {
    testcontainers = await import('testcontainers');
  } catch (error) {
    return `testcontainers is not installed (${message(error)})`;
  }
  try {
    await withTimeout(
      testcontainers.getContainerRuntimeClient(),
      options.detectTimeoutMs ?? 5000,
      'looking for a container runtime',
    );
  } catch (error) {
    return `no container runtime (${message(error)})`;
  }
  let container: StartedRedisContainer;
  const { RedisContainer } = await import('@testcontainers/redis');
  try {
    container = await withTimeout(
      new RedisContainer(image).start(),
      options.startTimeoutMs ?? 180_000,
      `starting ${image}`,
    );
  } catch (error) {
    return `a container runtime answered but ${image} did not start (${message(error)})`;
  }
  return {
    url: container.getConnectionUrl(),
    stop: async () => {
      await container.stop();
    },
  };
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
