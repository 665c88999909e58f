/** The example worker's settings, all from the environment (see the README's table). */
export interface WorkerConfig {
  readonly coordinatorUrl: string;
  readonly token: string | undefined;
  readonly redisUrl: string;
  readonly group: string;
  /** HTTP port for health, metrics and status (0 = any free port). */
  readonly port: number;
  readonly memberId: string | undefined;
  readonly instanceId: string | undefined;
  /** Simulated work per message. */
  readonly handlerDelayMs: number;
  /**
   * Simulated teardown of the worker's own resources: after closing the record file in
   * `onModuleDestroy`, the recorder takes this long (a database pool finishing its queries).
   */
  readonly teardownDelayMs: number;
  /** Append one JSON line per handled message here (tests, the demo). */
  readonly recordFile: string | undefined;
  /** Messages whose key starts with this prefix always fail (to show retries and dead-letter). */
  readonly failKeyPrefix: string | undefined;
  /**
   * Tests: after this many acknowledgement batches Redis accepted (0 = never), the worker kills
   * itself with SIGKILL as it learns of the last one, before recording it — a crash between
   * Redis applying an ack and the process seeing the answer.
   */
  readonly crashAfterAcks: number;
  readonly maxDeliveries: number;
  readonly batchSize: number;
  /**
   * How long a graceful stop waits for in-flight handlers before it leaves the group (the
   * library's `shutdownTimeoutMs`; undefined: its default, 30 s). Keep a pod's
   * `terminationGracePeriodSeconds` above it (see docs/operations.md).
   */
  readonly shutdownTimeoutMs: number | undefined;
  /** How often the library samples per-shard lag and pending (0 = its default, 5 s). */
  readonly metricsSampleIntervalMs: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    throw new Error(`${name} must be a non-negative integer (got ${JSON.stringify(raw)})`);
  }
  return n;
}

/** Reads the worker's settings; throws with the variable's name on a bad value. */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  return {
    coordinatorUrl: env.COORDINATOR_URL ?? 'http://127.0.0.1:7400',
    token: env.COORDINATOR_TOKEN,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    group: env.GROUP ?? 'example',
    port: int(env, 'PORT', 7500),
    memberId: env.MEMBER_ID || undefined,
    instanceId: env.INSTANCE_ID || undefined,
    handlerDelayMs: int(env, 'HANDLER_DELAY_MS', 0),
    teardownDelayMs: int(env, 'TEARDOWN_DELAY_MS', 0),
    recordFile: env.RECORD_FILE || undefined,
    failKeyPrefix: env.FAIL_KEY_PREFIX || undefined,
    crashAfterAcks: int(env, 'CRASH_AFTER_ACKS', 0),
    maxDeliveries: int(env, 'MAX_DELIVERIES', 5),
    batchSize: int(env, 'BATCH_SIZE', 100),
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS ? int(env, 'SHUTDOWN_TIMEOUT_MS', 0) : undefined,
    metricsSampleIntervalMs: int(env, 'METRICS_SAMPLE_INTERVAL_MS', 0),
  };
}
