import { freePort } from './free-port.js';
import { DEFAULT_PROBE_TIMEOUT_MS, probeRedis } from './redis-probe.js';
import { type RedisServerProcess, spawnRedisServer } from './redis-server-process.js';
import { startRedisContainer, type RedisContainerOptions } from './redis-testcontainer.js';
import { RedisUnavailableError } from './redis-unavailable.error.js';
import { createTempDir } from './temp-dir.js';

/** Where the test Redis came from. */
export type RedisSource = 'env' | 'local' | 'testcontainers' | 'redis-server';

/** The Redis the tests use, and how to release it. */
export interface ResolvedRedis {
  /** Connection URL. */
  readonly url: string;
  /** Which step of the resolution produced it. */
  readonly source: RedisSource;
  /** Stops what the resolution started (a no-op for `env` and `local`). Idempotent. */
  stop(): Promise<void>;
}

/** Options of {@link resolveRedis}; the defaults are the real resolution order. */
export interface ResolveRedisOptions {
  /** Environment to read `REDIS_URL` from; default `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The "already running" server to try second; default `redis://127.0.0.1:6379`; `false` skips it. */
  localUrl?: string | false;
  /** Bound on each connection probe; default 2000 ms. */
  probeTimeoutMs?: number;
  /** Docker via testcontainers (third); `false` skips it. */
  docker?: RedisContainerOptions | false;
  /** `redis-server` binary spawned on a free port (fourth); default `redis-server`; `false` skips it. */
  redisServer?: string | false;
  /** Progress lines (what was tried, what was chosen); default silent. */
  log?: (line: string) => void;
}

/** The default "already running" Redis. */
export const LOCAL_REDIS_URL = 'redis://127.0.0.1:6379';

const HOW_TO_GET_REDIS =
  'How to get Redis for the tests: set REDIS_URL=redis://<host>:<port> to a running server; or ' +
  'start one on the default port (`redis-server --port 6379`, from apt-get install redis-server ' +
  'or brew install redis) or just put redis-server on PATH (the tests then spawn their own); or ' +
  'install and start Docker (the tests then run redis:7-alpine through testcontainers).';

/**
 * Finds or starts the Redis the tests use, in this order: `REDIS_URL` if set (and then only it:
 * no fallback), a server answering at `localUrl`, a container through testcontainers, a
 * `redis-server` from PATH spawned on a free port (`--save "" --appendonly no`). Every probe is
 * bounded by `probeTimeoutMs`.
 *
 * @throws RedisUnavailableError with one message saying what was tried and how to get Redis.
 */
export async function resolveRedis(options: ResolveRedisOptions = {}): Promise<ResolvedRedis> {
  const env = options.env ?? process.env;
  const timeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const log = options.log ?? (() => undefined);
  const noop = async (): Promise<void> => undefined;

  const fromEnv = env.REDIS_URL;
  if (fromEnv !== undefined && fromEnv !== '') {
    const probe = await probeRedis(fromEnv, timeoutMs);
    if (probe.ok) {
      log(`Redis: REDIS_URL (${redact(fromEnv)})`);
      return { url: fromEnv, source: 'env', stop: noop };
    }
    throw new RedisUnavailableError(
      `Redis: REDIS_URL=${redact(fromEnv)} is set but no Redis answered there ` +
        `(${probe.reason}). REDIS_URL is used alone when set, without fallbacks: fix it, start ` +
        `Redis there, or unset it. ${HOW_TO_GET_REDIS}`,
    );
  }

  const tried: string[] = ['REDIS_URL: not set'];
  const localUrl = options.localUrl ?? LOCAL_REDIS_URL;
  if (localUrl !== false) {
    const probe = await probeRedis(localUrl, timeoutMs);
    if (probe.ok) {
      log(`Redis for the tests: ${localUrl} (already running)`);
      return { url: localUrl, source: 'local', stop: noop };
    }
    tried.push(`${localUrl}: ${probe.reason}`);
  }

  if (options.docker !== false) {
    const container = await startRedisContainer(options.docker ?? {});
    if (typeof container !== 'string') {
      log(`Redis for the tests: container via testcontainers at ${container.url}`);
      return { url: container.url, source: 'testcontainers', stop: once(() => container.stop()) };
    }
    tried.push(`Docker via testcontainers: ${container}`);
  }

  if (options.redisServer !== false) {
    const spawned = await spawnEphemeralRedis(options.redisServer ?? 'redis-server');
    if (typeof spawned !== 'string') {
      log(`Redis for the tests: spawned redis-server at ${spawned.url} (pid ${spawned.pid})`);
      return spawned;
    }
    tried.push(`redis-server on PATH: ${spawned}`);
  }

  throw new RedisUnavailableError(
    `Redis for the tests: none found. Tried ${tried.join('; ')}. ${HOW_TO_GET_REDIS}`,
  );
}

async function spawnEphemeralRedis(
  binary: string,
): Promise<(ResolvedRedis & { readonly pid: number }) | string> {
  const dir = createTempDir('redis');
  let server: RedisServerProcess;
  try {
    server = await spawnRedisServer({
      port: await freePort(),
      dir: dir.path,
      binary,
      args: ['--save', '', '--appendonly', 'no'],
    });
  } catch (error) {
    dir.remove();
    return error instanceof Error ? (error.message.split('\n')[0] ?? error.message) : String(error);
  }
  return {
    url: server.url,
    source: 'redis-server',
    pid: server.pid,
    stop: once(async () => {
      await server.stop();
      dir.remove();
    }),
  };
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
}

/** `url` with any password replaced by `***`, for messages. */
function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (!parsed.password) return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url;
  }
}
