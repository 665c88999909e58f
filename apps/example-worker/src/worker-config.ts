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
  /**
   * PostgreSQL URL: handle `orders` exactly once into PostgreSQL (one `order_effects` row per
   * entry, docs/exactly-once.md) instead of the plain handler. Unset: the worker never loads `pg`.
   */
  readonly exactlyOnceDatabaseUrl: string | undefined;
  /**
   * Tests, with `EXACTLY_ONCE_DATABASE_URL`: SIGKILL after the n-th message whose transaction
   * committed (or was found applied), before its ack — a crash between commit and ack.
   */
  readonly crashAfterCommits: number;
  readonly maxDeliveries: number;
  readonly batchSize: number;
  /** The handler's `ordering` (`shard`, the default, or `key`). */
  readonly ordering: 'shard' | 'key';
  /** With `ordering: key`: handler calls per shard at once (0 = the library's default, 16). */
  readonly maxConcurrency: number;
  /**
   * How long a graceful stop waits for in-flight handlers before it leaves the group (the
   * library's `shutdownTimeoutMs`; undefined: its default, 30 s). Keep a pod's
   * `terminationGracePeriodSeconds` above it (see docs/operations.md).
   */
  readonly shutdownTimeoutMs: number | undefined;
  /** How often the library samples per-shard lag and pending (0 = its default, 5 s). */
  readonly metricsSampleIntervalMs: number;
  /** `text` or `json` (Nest's ConsoleLogger in JSON mode: one object per line). */
  readonly logFormat: 'text' | 'json';
}

function logFormat(env: NodeJS.ProcessEnv): 'text' | 'json' {
  const raw = env.LOG_FORMAT;
  if (raw === undefined || raw === '' || raw === 'text') return 'text';
  if (raw === 'json') return 'json';
  throw new Error(`LOG_FORMAT must be text or json (got ${JSON.stringify(raw)})`);
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

function ordering(raw: string | undefined): 'shard' | 'key' {
  if (raw === undefined || raw === '' || raw === 'shard') return 'shard';
  if (raw === 'key') return 'key';
  throw new Error(`ORDERING must be "shard" or "key" (got ${JSON.stringify(raw)})`);
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
    exactlyOnceDatabaseUrl: env.EXACTLY_ONCE_DATABASE_URL || undefined,
    crashAfterCommits: int(env, 'CRASH_AFTER_COMMITS', 0),
    maxDeliveries: int(env, 'MAX_DELIVERIES', 5),
    batchSize: int(env, 'BATCH_SIZE', 100),
    ordering: ordering(env.ORDERING),
    maxConcurrency: int(env, 'MAX_CONCURRENCY', 0),
    shutdownTimeoutMs: env.SHUTDOWN_TIMEOUT_MS ? int(env, 'SHUTDOWN_TIMEOUT_MS', 0) : undefined,
    metricsSampleIntervalMs: int(env, 'METRICS_SAMPLE_INTERVAL_MS', 0),
    logFormat: logFormat(env),
  };
}
