import { z } from 'zod';
import { ID_PATTERN, NAME_PATTERN } from '../protocol/limits.js';
import { isRedisUrl } from '../redis/redis-url.js';
import { OPTION_LIMITS } from '../constants/stream-coordinator.constants.js';

/**
 * Zod schemas of the module options and of `@StreamShardHandler` options. Every rule carries the
 * text that ends up in the error message ("must be …"), so one field gives one clear message
 * whatever check failed (type, integer, range).
 *
 * @internal
 */

/** Problem texts shared with the message factories and the tests. @internal */
export const OPTION_RULES = {
  name: 'must be a name of 1–128 characters from [A-Za-z0-9._-]',
  id: 'must be an id of 1–255 printable ASCII characters (0x21–0x7E, no spaces)',
  tokenRequired: 'is required',
  tokenCharacters: 'must contain only printable ASCII characters (no spaces or line breaks)',
  coordinatorUrl: 'must be an http:// or https:// URL',
  boolean: 'must be true or false',
  memberId:
    'must be an id of 1–255 printable ASCII characters, a function returning one, or "coordinator"',
  redis:
    'must be a Redis URL (redis://, rediss:// or redis+cluster://), ioredis options, or { cluster: nodes, clusterOptions? }',
  clusterNodes: 'must be a non-empty array of { host, port } objects or "host:port" strings',
  clusterNode: 'must be { host: string, port: integer 1–65535 } or a "host:port" string',
  clusterOptions: 'must be an ioredis ClusterOptions object',
  serializer: 'must be an object with serialize(payload) and deserialize(raw) methods',
  metrics: 'must be false or an object { registry?, prefix?, sampleIntervalMs? }',
  metricsRegistry: 'must be a prom-client Registry (an object with registerMetric() and metrics())',
  metricsPrefix: 'must be a Prometheus name prefix matching [a-zA-Z_:][a-zA-Z0-9_:]*',
  logger: 'must be true, false or a LoggerService (an object with log(), error() and warn())',
  retryOrder: 'must not be greater than "maxDelayMs"',
  nonRetryable: 'must be an array of exception classes, for example [BadRequestException]',
  ordering: 'must be "shard" or "key"',
  startFrom: 'must be "earliest" or "latest"',
} as const;

/** `must be an integer between min and max`. @internal */
export const integerRule = (limits: { min: number; max: number }): string =>
  `must be an integer between ${limits.min} and ${limits.max}`;

/** `must be a number between min and max`. @internal */
export const numberRule = (limits: { min: number; max: number }): string =>
  `must be a number between ${limits.min} and ${limits.max}`;

function integerBetween(limits: { min: number; max: number }) {
  const error = integerRule(limits);
  return z.number({ error }).int({ error }).min(limits.min, { error }).max(limits.max, { error });
}

function numberBetween(limits: { min: number; max: number }) {
  const error = numberRule(limits);
  return z.number({ error }).min(limits.min, { error }).max(limits.max, { error });
}

function patternString(pattern: RegExp, error: string) {
  return z.string({ error }).regex(pattern, { error });
}

/** True for `{…}` objects (not arrays, not null, not functions). @internal */
export function isPlainRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function hasMethods(value: unknown, ...names: string[]): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return names.every((name) => typeof record[name] === 'function');
}

/** Schema of `retry` (backoff) options. @internal */
export const retryBackoffSchema = z.strictObject({
  initialDelayMs: integerBetween(OPTION_LIMITS.retryDelayMs).optional(),
  maxDelayMs: integerBetween(OPTION_LIMITS.retryDelayMs).optional(),
  multiplier: numberBetween(OPTION_LIMITS.retryMultiplier).optional(),
});

/** Schema of `@StreamShardHandler` options and of `handlerDefaults`. @internal */
export const streamShardHandlerOptionsSchema = z.strictObject({
  concurrency: integerBetween(OPTION_LIMITS.concurrency).optional(),
  batchSize: integerBetween(OPTION_LIMITS.batchSize).optional(),
  blockMs: integerBetween(OPTION_LIMITS.blockMs).optional(),
  maxDeliveries: integerBetween(OPTION_LIMITS.maxDeliveries).optional(),
  retry: retryBackoffSchema.optional(),
  deadLetter: z.boolean({ error: OPTION_RULES.boolean }).optional(),
  nonRetryable: z
    .array(
      z.custom((value) => typeof value === 'function' && 'prototype' in value, {
        error: OPTION_RULES.nonRetryable,
      }),
      { error: OPTION_RULES.nonRetryable },
    )
    .optional(),
  ordering: z.enum(['shard', 'key'], { error: OPTION_RULES.ordering }).optional(),
  maxConcurrency: integerBetween(OPTION_LIMITS.maxConcurrency).optional(),
  maxBufferedEntries: integerBetween(OPTION_LIMITS.maxBufferedEntries).optional(),
  startFrom: z.enum(['earliest', 'latest'], { error: OPTION_RULES.startFrom }).optional(),
});

/** Schema of the `batch` option of one `@StreamShardHandler` (not of `handlerDefaults`). @internal */
export const batchOptionsSchema = z.strictObject({
  maxSize: integerBetween(OPTION_LIMITS.batchMaxSize),
  maxWaitMs: integerBetween(OPTION_LIMITS.batchMaxWaitMs).optional(),
});

/**
 * Schema of one `@StreamShardHandler`'s own options: the `handlerDefaults` ones plus `batch`
 * (a batch handler takes an array, so batching is chosen per handler, never module-wide).
 * @internal
 */
export const ownHandlerOptionsSchema = streamShardHandlerOptionsSchema.extend({
  batch: batchOptionsSchema.optional(),
});

function isPort(value: unknown): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65_535;
}

function isClusterNode(value: unknown): boolean {
  if (typeof value === 'string') {
    const match = /^([^\s:]+):(\d{1,5})$/.exec(value);
    return match !== null && isPort(Number(match[2]));
  }
  if (!isPlainRecord(value)) return false;
  const keys = Object.keys(value);
  return (
    typeof value.host === 'string' &&
    value.host !== '' &&
    isPort(value.port) &&
    keys.every((key) => key === 'host' || key === 'port')
  );
}

const clusterNodeSchema = z.custom<unknown>(isClusterNode, { error: OPTION_RULES.clusterNode });

const clusterSchema = z.strictObject({
  cluster: z.array(clusterNodeSchema, { error: OPTION_RULES.clusterNodes }).min(1, {
    error: OPTION_RULES.clusterNodes,
  }),
  clusterOptions: z
    .custom<object>((value) => isPlainRecord(value), { error: OPTION_RULES.clusterOptions })
    .optional(),
});

/**
 * `redis`: a URL, `{ cluster, clusterOptions? }`, or any other plain object (ioredis options,
 * which ioredis itself validates; the object is passed on untouched).
 */
const redisSchema = z.unknown().superRefine((value, ctx) => {
  if (typeof value === 'string') {
    if (!isRedisUrl(value))
      ctx.addIssue({ code: 'custom', message: OPTION_RULES.redis, input: value });
    return;
  }
  if (!isPlainRecord(value)) {
    ctx.addIssue({ code: 'custom', message: OPTION_RULES.redis, input: value });
    return;
  }
  if (!('cluster' in value)) return;
  const result = clusterSchema.safeParse(value, { reportInput: true });
  if (!result.success) for (const issue of result.error.issues) ctx.addIssue({ ...issue });
});

const metricsObjectSchema = z.strictObject({
  registry: z
    .custom<object>((value) => hasMethods(value, 'registerMetric', 'metrics'), {
      error: OPTION_RULES.metricsRegistry,
    })
    .optional(),
  prefix: patternString(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, OPTION_RULES.metricsPrefix).optional(),
  sampleIntervalMs: integerBetween(OPTION_LIMITS.metricsSampleIntervalMs).optional(),
});

const metricsSchema = z.unknown().superRefine((value, ctx) => {
  if (value === undefined || value === false) return;
  if (!isPlainRecord(value)) {
    ctx.addIssue({ code: 'custom', message: OPTION_RULES.metrics, input: value });
    return;
  }
  const result = metricsObjectSchema.safeParse(value, { reportInput: true });
  if (!result.success) for (const issue of result.error.issues) ctx.addIssue({ ...issue });
});

const tokenSchema = z.unknown().superRefine((value, ctx) => {
  if (typeof value !== 'string' || value.trim() === '') {
    ctx.addIssue({ code: 'custom', message: OPTION_RULES.tokenRequired, input: value });
  } else if (!/^[\x21-\x7e]+$/.test(value)) {
    ctx.addIssue({ code: 'custom', message: OPTION_RULES.tokenCharacters, input: value });
  }
});

const coordinatorUrlSchema = z.unknown().superRefine((value, ctx) => {
  if (!isHttpUrl(value))
    ctx.addIssue({ code: 'custom', message: OPTION_RULES.coordinatorUrl, input: value });
});

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

const memberIdSchema = z.custom<unknown>(
  (value) => typeof value === 'function' || (typeof value === 'string' && ID_PATTERN.test(value)),
  { error: OPTION_RULES.memberId },
);

/**
 * Schema of the module options. `isGlobal` is not part of it: the module builder removes its
 * extras before the options reach validation.
 *
 * @internal
 */
export const moduleOptionsSchema = z.strictObject({
  coordinatorUrl: coordinatorUrlSchema,
  token: tokenSchema,
  redis: redisSchema,
  group: patternString(NAME_PATTERN, OPTION_RULES.name),
  memberId: memberIdSchema.optional(),
  instanceId: patternString(ID_PATTERN, OPTION_RULES.id).optional(),
  rackId: patternString(ID_PATTERN, OPTION_RULES.id).optional(),
  assignor: patternString(ID_PATTERN, OPTION_RULES.id).optional(),
  rebalanceTimeoutMs: integerBetween(OPTION_LIMITS.rebalanceTimeoutMs).optional(),
  handlerDefaults: streamShardHandlerOptionsSchema.optional(),
  publishOnly: z.boolean({ error: OPTION_RULES.boolean }).optional(),
  shutdownTimeoutMs: integerBetween(OPTION_LIMITS.shutdownTimeoutMs).optional(),
  leaveOnShutdown: z
    .enum(['leave', 'temporary'], { error: 'must be "leave" or "temporary"' })
    .optional(),
  requestTimeoutMs: integerBetween(OPTION_LIMITS.requestTimeoutMs).optional(),
  serializer: z
    .custom<object>((value) => hasMethods(value, 'serialize', 'deserialize'), {
      error: OPTION_RULES.serializer,
    })
    .optional(),
  metrics: metricsSchema.optional(),
  logger: z
    .custom<unknown>(
      (value) => typeof value === 'boolean' || hasMethods(value, 'log', 'error', 'warn'),
      {
        error: OPTION_RULES.logger,
      },
    )
    .optional(),
  handlerFastPath: z.boolean({ error: OPTION_RULES.boolean }).optional(),
  readerClient: z
    .enum(['direct', 'bundled', 'application'], {
      error: 'must be "direct", "bundled" or "application"',
    })
    .optional(),
});

/** Known keys per object path, for "did you mean" suggestions on unknown keys. @internal */
export const KNOWN_MODULE_OPTION_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(moduleOptionsSchema.shape),
  handlerDefaults: Object.keys(streamShardHandlerOptionsSchema.shape),
  'handlerDefaults.retry': Object.keys(retryBackoffSchema.shape),
  metrics: Object.keys(metricsObjectSchema.shape),
  redis: Object.keys(clusterSchema.shape),
};

/** Known keys of `@StreamShardHandler` options per object path. @internal */
export const KNOWN_HANDLER_OPTION_KEYS: Readonly<Record<string, readonly string[]>> = {
  '': Object.keys(ownHandlerOptionsSchema.shape),
  retry: Object.keys(retryBackoffSchema.shape),
  batch: Object.keys(batchOptionsSchema.shape),
};
