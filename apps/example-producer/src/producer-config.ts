import { InvalidProducerConfigError } from './invalid-producer-config.error.js';

/**
 * The example producer's settings, all from the environment (documented in
 * `docs/operations.md`, "Containers"):
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | COORDINATOR_URL | http://127.0.0.1:7400 | where routing metadata comes from |
 * | COORDINATOR_TOKEN | (required) | member-role token |
 * | REDIS_URL | redis://127.0.0.1:6379 | the data plane (`redis+cluster://h1:p1,h2:p2` for a Cluster) |
 * | STREAM | orders | logical stream to publish to |
 * | KEY_COUNT | 100 | distinct routing keys (`key-0` … `key-<n-1>`) |
 * | RATE | 50 | messages per second (0: as fast as Redis takes them) |
 * | MAX_MESSAGES | 0 | stop after this many messages (0: never) |
 * | BATCH_SIZE | 200 | most messages per publish call |
 * | TRIM_MAXLEN | 0 | approximate `MAXLEN` trim of every shard written (0: no trimming) |
 * | PORT | 7600 | HTTP port of `/health/live`, `/health/ready` and `/status` (0: any free port) |
 */
export interface ProducerConfig {
  readonly coordinatorUrl: string;
  readonly token: string;
  readonly redisUrl: string;
  readonly stream: string;
  readonly keyCount: number;
  readonly rate: number;
  readonly maxMessages: number;
  readonly batchSize: number;
  readonly trimMaxLen: number;
  readonly port: number;
}

/** Every variable {@link loadProducerConfig} reads (the deployment tests check manifests against it). */
export const PRODUCER_ENV_NAMES = [
  'COORDINATOR_URL',
  'COORDINATOR_TOKEN',
  'REDIS_URL',
  'STREAM',
  'KEY_COUNT',
  'RATE',
  'MAX_MESSAGES',
  'BATCH_SIZE',
  'TRIM_MAXLEN',
  'PORT',
] as const;

/** Reads and validates the settings; throws {@link InvalidProducerConfigError} listing every problem. */
export function loadProducerConfig(env: NodeJS.ProcessEnv = process.env): ProducerConfig {
  const problems: string[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(
        `${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(raw)})`,
      );
      return fallback;
    }
    return n;
  };
  const coordinatorUrl = env.COORDINATOR_URL?.trim() || 'http://127.0.0.1:7400';
  if (!/^https?:\/\/\S+$/.test(coordinatorUrl)) {
    problems.push(`COORDINATOR_URL must be an http(s) URL (got ${JSON.stringify(coordinatorUrl)})`);
  }
  const token = env.COORDINATOR_TOKEN?.trim() ?? '';
  if (token === '')
    problems.push('COORDINATOR_TOKEN is required (a member-role token of the coordinator)');
  const stream = env.STREAM?.trim() || 'orders';
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(stream)) {
    problems.push(
      `STREAM must be 1-128 characters of [A-Za-z0-9._-] (got ${JSON.stringify(stream)})`,
    );
  }
  const config: ProducerConfig = {
    coordinatorUrl,
    token,
    redisUrl: env.REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
    stream,
    keyCount: int('KEY_COUNT', 100, 1, 1_000_000),
    rate: int('RATE', 50, 0, 1_000_000),
    maxMessages: int('MAX_MESSAGES', 0, 0, Number.MAX_SAFE_INTEGER),
    batchSize: int('BATCH_SIZE', 200, 1, 10_000),
    trimMaxLen: int('TRIM_MAXLEN', 0, 0, Number.MAX_SAFE_INTEGER),
    port: int('PORT', 7600, 0, 65535),
  };
  if (problems.length > 0) throw new InvalidProducerConfigError(problems);
  return config;
}
