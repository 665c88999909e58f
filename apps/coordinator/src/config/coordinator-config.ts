import { isRedisUrl } from '@redis-stream-coordinator/nestjs/internal';
import { isValidId, isValidName } from '@redis-stream-coordinator/nestjs/protocol';
import { z } from 'zod';
import { InvalidConfigError } from './invalid-config.error.js';
import { isLoopbackHost, tokenProblems } from './token-rules.js';
import { parseTrustProxy, type TrustProxy } from './trust-proxy.js';

const int = (name: string, min: number, max: number, fallback: number) =>
  z
    .string()
    .optional()
    .transform((raw, ctx) => {
      if (raw === undefined || raw.trim() === '') return fallback;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < min || n > max) {
        ctx.addIssue({
          code: 'custom',
          message: `${name} must be an integer between ${min} and ${max} (got ${JSON.stringify(raw)})`,
        });
        return z.NEVER;
      }
      return n;
    });

const tokens = z
  .string()
  .optional()
  .transform((raw) =>
    (raw ?? '')
      .split(',')
      .map((t) => t.trim())
      .filter((t) => t.length > 0),
  );

/** A stream declared at start: `orders:8`. */
export interface DeclaredStream {
  readonly stream: string;
  readonly shards: number;
}

const MAX_SHARDS_LIMIT = 4096;

const schema = z
  .object({
    PORT: int('PORT', 0, 65535, 7400),
    HOST: z.string().optional().default('0.0.0.0'),
    REDIS_URL: z
      .string()
      .optional()
      .default('redis://127.0.0.1:6379')
      .refine((url) => isRedisUrl(url), {
        message:
          'REDIS_URL must look like redis://host:port, rediss://host:port or redis+cluster://host1:port1,host2:port2',
      }),
    KEY_PREFIX: z
      .string()
      .optional()
      .default('rsc')
      .refine((p) => /^[A-Za-z0-9._-]{1,64}$/.test(p), {
        message: 'KEY_PREFIX must be 1-64 characters of [A-Za-z0-9._-]',
      }),
    COORDINATOR_TOKEN: tokens,
    COORDINATOR_ADMIN_TOKEN: tokens,
    COORDINATOR_VIEWER_TOKEN: tokens,
    METRICS_TOKEN: tokens,
    COORDINATOR_AUTH: z
      .enum(['token', 'none'], { message: 'COORDINATOR_AUTH must be "token" or "none"' })
      .optional()
      .default('token'),
    HEARTBEAT_INTERVAL_MS: int('HEARTBEAT_INTERVAL_MS', 10, 3_600_000, 3000),
    SESSION_TIMEOUT_MS: int('SESSION_TIMEOUT_MS', 50, 86_400_000, 15000),
    STREAMS: z.string().optional().default(''),
    GROUP_MAX_SIZE: int('GROUP_MAX_SIZE', 1, 1_000_000, 10000),
    MAX_GROUPS: int('MAX_GROUPS', 1, 10_000_000, 10_000),
    AUTH_RATE_LIMIT_MAX: int('AUTH_RATE_LIMIT_MAX', 0, 1_000_000, 300),
    AUTH_RATE_LIMIT_WINDOW_MS: int('AUTH_RATE_LIMIT_WINDOW_MS', 1000, 3_600_000, 60_000),
    OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: int('OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', 0, 60_000, 1000),
    REQUEST_TIMEOUT_MS: int('REQUEST_TIMEOUT_MS', 1000, 600_000, 30_000),
    DEFAULT_ASSIGNOR: z
      .string()
      .optional()
      .default('uniform')
      .refine((name) => isValidId(name), {
        message:
          'DEFAULT_ASSIGNOR must be an assignor name of 1-255 printable ASCII characters (built in: uniform, range)',
      }),
    MAX_SHARDS: int('MAX_SHARDS', 1, MAX_SHARDS_LIMIT, 1024),
    EVENT_LOG_MAXLEN: int('EVENT_LOG_MAXLEN', 100, 100_000_000, 10000),
    EVENT_LOG_MAX_AGE_MS: int('EVENT_LOG_MAX_AGE_MS', 0, 365 * 86_400_000, 0),
    SHUTDOWN_GRACE_MS: int('SHUTDOWN_GRACE_MS', 0, 600_000, 0),
    RESHARD_POLL_MS: int('RESHARD_POLL_MS', 20, 60_000, 200),
    GROUP_INDEX_REPAIR_MS: int('GROUP_INDEX_REPAIR_MS', 100, 86_400_000, 30_000),
    REDIS_STARTUP_TIMEOUT_MS: int('REDIS_STARTUP_TIMEOUT_MS', 0, 3_600_000, 0),
    RESHARD_IDLE_GROUP_GRACE_MS: int('RESHARD_IDLE_GROUP_GRACE_MS', 0, 7 * 86_400_000, 600_000),
    TRUST_PROXY: z
      .string()
      .optional()
      .transform((raw, ctx) => {
        const parsed = parseTrustProxy(raw);
        if (parsed === null) {
          ctx.addIssue({
            code: 'custom',
            message: `TRUST_PROXY must be false, true, a proxy hop count (1-100) or comma-separated proxy addresses/CIDR ranges (got ${JSON.stringify(raw)})`,
          });
          return z.NEVER;
        }
        return parsed;
      }),
    LOG_LEVEL: z
      .enum(['error', 'warn', 'log', 'debug', 'verbose'], {
        message: 'LOG_LEVEL must be one of error, warn, log, debug, verbose',
      })
      .optional()
      .default('log'),
    LOG_FORMAT: z
      .enum(['text', 'json'], { message: 'LOG_FORMAT must be text or json' })
      .optional()
      .default('text'),
  })
  .superRefine((env, ctx) => {
    if (env.HEARTBEAT_INTERVAL_MS >= env.SESSION_TIMEOUT_MS) {
      ctx.addIssue({
        code: 'custom',
        path: ['HEARTBEAT_INTERVAL_MS'],
        message: `HEARTBEAT_INTERVAL_MS (${env.HEARTBEAT_INTERVAL_MS}) must be smaller than SESSION_TIMEOUT_MS (${env.SESSION_TIMEOUT_MS})`,
      });
    }
    for (const problem of tokenProblems(env)) {
      ctx.addIssue({ code: 'custom', path: [problem.variable], message: problem.message });
    }
    if (env.COORDINATOR_AUTH === 'none' && !isLoopbackHost(env.HOST)) {
      ctx.addIssue({
        code: 'custom',
        path: ['COORDINATOR_AUTH'],
        message: `COORDINATOR_AUTH=none is only allowed when the server listens on loopback (HOST=127.0.0.1, ::1 or localhost; got HOST=${JSON.stringify(env.HOST)}): anyone who reaches the port would be admin`,
      });
    }
    if (
      env.COORDINATOR_AUTH === 'token' &&
      env.COORDINATOR_TOKEN.length + env.COORDINATOR_ADMIN_TOKEN.length === 0
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['COORDINATOR_TOKEN'],
        message:
          'no token configured: set COORDINATOR_TOKEN (member role) and COORDINATOR_ADMIN_TOKEN (admin role), or COORDINATOR_AUTH=none for local development only',
      });
    }
  });

/** The coordinator's validated configuration (docs/protocol.md §10 plus the documented extras). */
export interface CoordinatorConfig {
  readonly port: number;
  readonly host: string;
  readonly redisUrl: string;
  readonly keyPrefix: string;
  readonly memberTokens: readonly string[];
  readonly adminTokens: readonly string[];
  /** Read-only tokens: the dashboard and the read routes (docs/protocol.md §2.2). */
  readonly viewerTokens: readonly string[];
  /** When non-empty, `GET /metrics` needs one of these bearer tokens. */
  readonly metricsTokens: readonly string[];
  /** `none` only for local development: every request is treated as admin. */
  readonly auth: 'token' | 'none';
  readonly heartbeatIntervalMs: number;
  readonly sessionTimeoutMs: number;
  readonly streams: readonly DeclaredStream[];
  readonly groupMaxSize: number;
  /** Groups the coordinator holds at most; a join that would create one more is refused. */
  readonly maxGroups: number;
  /** Requests without a valid token one client address may make per window (0: no limit). */
  readonly authRateLimitMax: number;
  readonly authRateLimitWindowMs: number;
  /** Event-loop delay above which requests get 503 + `Retry-After` (0: never). */
  readonly overloadMaxEventLoopDelayMs: number;
  /** Longest a request may take to arrive and be answered; also the idle-connection timeout. */
  readonly requestTimeoutMs: number;
  readonly defaultAssignor: string;
  readonly maxShards: number;
  readonly eventLogMaxLen: number;
  readonly eventLogMaxAgeMs: number;
  readonly shutdownGraceMs: number;
  readonly reshardPollMs: number;
  /** Base interval of the index repair that SCANs group meta hashes (jittered up to twice it). */
  readonly groupIndexRepairMs: number;
  /** How long start-up waits for an unreachable Redis before the process stops; 0 = no limit. */
  readonly redisStartupTimeoutMs: number;
  /**
   * How long a reshard waits for a tracked group that has no member subscribed to the stream
   * before it stops waiting (its undrained rest of the old shards is then deleted with them).
   */
  readonly reshardIdleGroupGraceMs: number;
  readonly logLevel: 'error' | 'warn' | 'log' | 'debug' | 'verbose';
  /** `text` (Nest's console format) or `json` (one JSON object per line, for log shippers). */
  readonly logFormat: 'text' | 'json';
  /** Whose `X-Forwarded-For` sets a member's `clientHost` (default: nobody's, the socket address). */
  readonly trustProxy: TrustProxy;
}

function parseStreams(raw: string, maxShards: number): DeclaredStream[] {
  const out: DeclaredStream[] = [];
  for (const item of raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [name, count, ...rest] = item.split(':');
    const shards = Number(count);
    if (
      rest.length > 0 ||
      !name ||
      !isValidName(name) ||
      !Number.isInteger(shards) ||
      shards < 1 ||
      shards > maxShards
    ) {
      throw new InvalidConfigError([
        `STREAMS entry ${JSON.stringify(item)} must look like <name>:<shards> with a name of 1-128 [A-Za-z0-9._-] and 1-${maxShards} shards`,
      ]);
    }
    if (out.some((s) => s.stream === name)) {
      throw new InvalidConfigError([`STREAMS declares ${name} twice`]);
    }
    out.push({ stream: name, shards });
  }
  return out;
}

/**
 * Reads and validates the configuration from environment variables. Throws
 * {@link InvalidConfigError} listing every problem; the process then stops with that message.
 */
export function loadCoordinatorConfig(env: NodeJS.ProcessEnv = process.env): CoordinatorConfig {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    throw new InvalidConfigError(parsed.error.issues.map((i) => i.message));
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    redisUrl: e.REDIS_URL,
    keyPrefix: e.KEY_PREFIX,
    memberTokens: e.COORDINATOR_TOKEN,
    adminTokens: e.COORDINATOR_ADMIN_TOKEN,
    viewerTokens: e.COORDINATOR_VIEWER_TOKEN,
    metricsTokens: e.METRICS_TOKEN,
    auth: e.COORDINATOR_AUTH,
    heartbeatIntervalMs: e.HEARTBEAT_INTERVAL_MS,
    sessionTimeoutMs: e.SESSION_TIMEOUT_MS,
    streams: parseStreams(e.STREAMS, e.MAX_SHARDS),
    groupMaxSize: e.GROUP_MAX_SIZE,
    maxGroups: e.MAX_GROUPS,
    authRateLimitMax: e.AUTH_RATE_LIMIT_MAX,
    authRateLimitWindowMs: e.AUTH_RATE_LIMIT_WINDOW_MS,
    overloadMaxEventLoopDelayMs: e.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    defaultAssignor: e.DEFAULT_ASSIGNOR,
    maxShards: e.MAX_SHARDS,
    eventLogMaxLen: e.EVENT_LOG_MAXLEN,
    eventLogMaxAgeMs: e.EVENT_LOG_MAX_AGE_MS,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    reshardPollMs: e.RESHARD_POLL_MS,
    groupIndexRepairMs: e.GROUP_INDEX_REPAIR_MS,
    redisStartupTimeoutMs: e.REDIS_STARTUP_TIMEOUT_MS,
    reshardIdleGroupGraceMs: e.RESHARD_IDLE_GROUP_GRACE_MS,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    trustProxy: e.TRUST_PROXY,
  };
}
