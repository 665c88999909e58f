import type { StreamCoordinatorModuleOptions } from './library.js';

/** Options every case starts from: valid, silent. */
export const VALID_OPTIONS = {
  coordinatorUrl: 'http://127.0.0.1:7400',
  token: 'member-token',
  redis: 'redis://127.0.0.1:6379',
  group: 'billing',
  logger: false,
} satisfies StreamCoordinatorModuleOptions;

/** A bad-options case: what to change in {@link VALID_OPTIONS} and the exact message expected. */
export interface BadOptionsCase {
  readonly name: string;
  /** Keys set to `undefined` here are removed from the options. */
  readonly patch: Record<string, unknown>;
  readonly message: string;
  /** Path of the first option at fault. */
  readonly path: string;
}

const M = 'StreamCoordinatorModule: ';
const INT = (min: number, max: number) => `must be an integer between ${min} and ${max}`;

/** Builds the options of a case. */
export function optionsOf(testCase: BadOptionsCase): StreamCoordinatorModuleOptions {
  const options: Record<string, unknown> = { ...VALID_OPTIONS, ...testCase.patch };
  for (const [key, value] of Object.entries(testCase.patch))
    if (value === undefined) delete options[key];
  return options as unknown as StreamCoordinatorModuleOptions;
}

export const BAD_OPTIONS_CASES: readonly BadOptionsCase[] = [
  {
    name: 'token missing',
    patch: { token: undefined },
    path: 'token',
    message: `${M}option "token" is required (got undefined); set COORDINATOR_TOKEN in the environment and pass token: process.env.COORDINATOR_TOKEN`,
  },
  {
    name: 'token empty',
    patch: { token: '' },
    path: 'token',
    message: `${M}option "token" is required (got an empty string); set COORDINATOR_TOKEN in the environment and pass token: process.env.COORDINATOR_TOKEN`,
  },
  {
    name: 'token blank (value not echoed)',
    patch: { token: '   ' },
    path: 'token',
    message: `${M}option "token" is required (got a string of 3 characters); set COORDINATOR_TOKEN in the environment and pass token: process.env.COORDINATOR_TOKEN`,
  },
  {
    name: 'token with a line break (value not echoed)',
    patch: { token: 'secret\nvalue' },
    path: 'token',
    message: `${M}option "token" must contain only printable ASCII characters (no spaces or line breaks) (got a string of 12 characters); set COORDINATOR_TOKEN in the environment and pass token: process.env.COORDINATOR_TOKEN`,
  },
  {
    name: 'coordinatorUrl not http',
    patch: { coordinatorUrl: 'ftp://127.0.0.1' },
    path: 'coordinatorUrl',
    message: `${M}option "coordinatorUrl" must be an http:// or https:// URL (got "ftp://127.0.0.1"); for example "http://127.0.0.1:7400"`,
  },
  {
    name: 'coordinatorUrl missing',
    patch: { coordinatorUrl: undefined },
    path: 'coordinatorUrl',
    message: `${M}option "coordinatorUrl" must be an http:// or https:// URL (got undefined); for example "http://127.0.0.1:7400"`,
  },
  {
    name: 'redis URL with a wrong scheme',
    patch: { redis: 'http://127.0.0.1:6379' },
    path: 'redis',
    message: `${M}option "redis" must be a Redis URL (redis://, rediss:// or redis+cluster://), ioredis options, or { cluster: nodes, clusterOptions? } (got "http://127.0.0.1:6379")`,
  },
  {
    name: 'redis a number',
    patch: { redis: 6379 },
    path: 'redis',
    message: `${M}option "redis" must be a Redis URL (redis://, rediss:// or redis+cluster://), ioredis options, or { cluster: nodes, clusterOptions? } (got 6379)`,
  },
  {
    name: 'redis cluster empty',
    patch: { redis: { cluster: [] } },
    path: 'redis.cluster',
    message: `${M}option "redis.cluster" must be a non-empty array of { host, port } objects or "host:port" strings (got an array)`,
  },
  {
    name: 'redis cluster node without port',
    patch: { redis: { cluster: ['10.0.0.1'] } },
    path: 'redis.cluster[0]',
    message: `${M}option "redis.cluster[0]" must be { host: string, port: integer 1–65535 } or a "host:port" string (got "10.0.0.1")`,
  },
  {
    name: 'redis cluster unknown key',
    patch: { redis: { cluster: ['10.0.0.1:7000'], clusterOption: {} } },
    path: 'redis.clusterOption',
    message: `${M}option "redis.clusterOption" is not a known option; did you mean "redis.clusterOptions"?`,
  },
  {
    name: 'group with a space',
    patch: { group: 'my group' },
    path: 'group',
    message: `${M}option "group" must be a name of 1–128 characters from [A-Za-z0-9._-] (got "my group"); the group is also the Redis consumer group on every shard`,
  },
  {
    name: 'group missing',
    patch: { group: undefined },
    path: 'group',
    message: `${M}option "group" must be a name of 1–128 characters from [A-Za-z0-9._-] (got undefined); the group is also the Redis consumer group on every shard`,
  },
  {
    name: 'memberId with a space',
    patch: { memberId: 'member 1' },
    path: 'memberId',
    message: `${M}option "memberId" must be an id of 1–255 printable ASCII characters, a function returning one, or "coordinator" (got "member 1"); leave it out to derive one from the pod-IP context`,
  },
  {
    name: 'memberId function returning a bad id',
    patch: { memberId: () => '' },
    path: 'memberId',
    message: `${M}option "memberId" is a function that must return an id of 1–255 printable ASCII characters (0x21–0x7E) (got an empty string)`,
  },
  {
    name: 'memberId function throwing',
    patch: {
      memberId: () => {
        throw new Error('no pod name');
      },
    },
    path: 'memberId',
    message: `${M}option "memberId" is a function that threw (got "no pod name"); the function is called once at bootstrap and must return the member id`,
  },
  {
    name: 'instanceId empty',
    patch: { instanceId: '' },
    path: 'instanceId',
    message: `${M}option "instanceId" must be an id of 1–255 printable ASCII characters (0x21–0x7E, no spaces) (got an empty string)`,
  },
  {
    name: 'rackId too long',
    patch: { rackId: 'r'.repeat(256) },
    path: 'rackId',
    message: `${M}option "rackId" must be an id of 1–255 printable ASCII characters (0x21–0x7E, no spaces) (got "${'r'.repeat(77)}...")`,
  },
  {
    name: 'assignor not a string',
    patch: { assignor: 5 },
    path: 'assignor',
    message: `${M}option "assignor" must be an id of 1–255 printable ASCII characters (0x21–0x7E, no spaces) (got 5)`,
  },
  {
    name: 'rebalanceTimeoutMs zero',
    patch: { rebalanceTimeoutMs: 0 },
    path: 'rebalanceTimeoutMs',
    message: `${M}option "rebalanceTimeoutMs" ${INT(1, 3_600_000)} (got 0)`,
  },
  {
    name: 'rebalanceTimeoutMs fractional',
    patch: { rebalanceTimeoutMs: 1.5 },
    path: 'rebalanceTimeoutMs',
    message: `${M}option "rebalanceTimeoutMs" ${INT(1, 3_600_000)} (got 1.5)`,
  },
  {
    name: 'rebalanceTimeoutMs a string',
    patch: { rebalanceTimeoutMs: '60000' },
    path: 'rebalanceTimeoutMs',
    message: `${M}option "rebalanceTimeoutMs" ${INT(1, 3_600_000)} (got "60000")`,
  },
  {
    name: 'rebalanceTimeoutMs NaN',
    patch: { rebalanceTimeoutMs: Number.NaN },
    path: 'rebalanceTimeoutMs',
    message: `${M}option "rebalanceTimeoutMs" ${INT(1, 3_600_000)} (got NaN)`,
  },
  {
    name: 'shutdownTimeoutMs negative',
    patch: { shutdownTimeoutMs: -1 },
    path: 'shutdownTimeoutMs',
    message: `${M}option "shutdownTimeoutMs" ${INT(1, 3_600_000)} (got -1)`,
  },
  {
    name: 'requestTimeoutMs too large',
    patch: { requestTimeoutMs: 600_001 },
    path: 'requestTimeoutMs',
    message: `${M}option "requestTimeoutMs" ${INT(1, 600_000)} (got 600001)`,
  },
  {
    name: 'requestTimeoutMs Infinity',
    patch: { requestTimeoutMs: Number.POSITIVE_INFINITY },
    path: 'requestTimeoutMs',
    message: `${M}option "requestTimeoutMs" ${INT(1, 600_000)} (got Infinity)`,
  },
  {
    name: 'handlerDefaults.batchSize zero',
    patch: { handlerDefaults: { batchSize: 0 } },
    path: 'handlerDefaults.batchSize',
    message: `${M}option "handlerDefaults.batchSize" must be an integer between 1 and 10000 (got 0)`,
  },
  {
    name: 'handlerDefaults.concurrency too large',
    patch: { handlerDefaults: { concurrency: 1025 } },
    path: 'handlerDefaults.concurrency',
    message: `${M}option "handlerDefaults.concurrency" ${INT(1, 1024)} (got 1025)`,
  },
  {
    name: 'handlerDefaults.blockMs zero (would block forever)',
    patch: { handlerDefaults: { blockMs: 0 } },
    path: 'handlerDefaults.blockMs',
    message: `${M}option "handlerDefaults.blockMs" ${INT(1, 300_000)} (got 0)`,
  },
  {
    name: 'handlerDefaults.nonRetryable not classes',
    patch: { handlerDefaults: { nonRetryable: 'BadRequestException' } },
    path: 'handlerDefaults.nonRetryable',
    message: `${M}option "handlerDefaults.nonRetryable" must be an array of exception classes, for example [BadRequestException] (got "BadRequestException")`,
  },
  {
    name: 'handlerDefaults.maxDeliveries zero',
    patch: { handlerDefaults: { maxDeliveries: 0 } },
    path: 'handlerDefaults.maxDeliveries',
    message: `${M}option "handlerDefaults.maxDeliveries" ${INT(1, 1000)} (got 0)`,
  },
  {
    name: 'handlerDefaults.maxDeliveries too large',
    patch: { handlerDefaults: { maxDeliveries: 1001 } },
    path: 'handlerDefaults.maxDeliveries',
    message: `${M}option "handlerDefaults.maxDeliveries" ${INT(1, 1000)} (got 1001)`,
  },
  {
    name: 'handlerDefaults.retry.multiplier below 1',
    patch: { handlerDefaults: { retry: { multiplier: 0.5 } } },
    path: 'handlerDefaults.retry.multiplier',
    message: `${M}option "handlerDefaults.retry.multiplier" must be a number between 1 and 100 (got 0.5)`,
  },
  {
    name: 'handlerDefaults.retry.initialDelayMs negative',
    patch: { handlerDefaults: { retry: { initialDelayMs: -5 } } },
    path: 'handlerDefaults.retry.initialDelayMs',
    message: `${M}option "handlerDefaults.retry.initialDelayMs" ${INT(0, 3_600_000)} (got -5)`,
  },
  {
    name: 'handlerDefaults.retry delays out of order',
    patch: { handlerDefaults: { retry: { initialDelayMs: 10_000 } } },
    path: 'handlerDefaults.retry.initialDelayMs',
    message: `${M}option "handlerDefaults.retry.initialDelayMs" must not be greater than "maxDelayMs" (got 10000, with maxDelayMs 5000); raise maxDelayMs or lower initialDelayMs`,
  },
  {
    name: 'handlerDefaults.deadLetter not a boolean',
    patch: { handlerDefaults: { deadLetter: 'yes' } },
    path: 'handlerDefaults.deadLetter',
    message: `${M}option "handlerDefaults.deadLetter" must be true or false (got "yes")`,
  },
  {
    name: 'handlerDefaults.startFrom not earliest or latest',
    patch: { handlerDefaults: { startFrom: 'beginning' } },
    path: 'handlerDefaults.startFrom',
    message: `${M}option "handlerDefaults.startFrom" must be "earliest" or "latest" (got "beginning")`,
  },
  {
    name: 'handlerDefaults misspelt key',
    patch: { handlerDefaults: { batchsize: 10 } },
    path: 'handlerDefaults.batchsize',
    message: `${M}option "handlerDefaults.batchsize" is not a known option; did you mean "handlerDefaults.batchSize"?`,
  },
  {
    name: 'handlerDefaults.retry misspelt key',
    patch: { handlerDefaults: { retry: { maxDelay: 10 } } },
    path: 'handlerDefaults.retry.maxDelay',
    message: `${M}option "handlerDefaults.retry.maxDelay" is not a known option; did you mean "handlerDefaults.retry.maxDelayMs"?`,
  },
  {
    name: 'publishOnly not a boolean',
    patch: { publishOnly: 'true' },
    path: 'publishOnly',
    message: `${M}option "publishOnly" must be true or false (got "true")`,
  },
  {
    name: 'serializer without deserialize',
    patch: { serializer: { serialize: () => '' } },
    path: 'serializer',
    message: `${M}option "serializer" must be an object with serialize(payload) and deserialize(raw) methods (got an object)`,
  },
  {
    name: 'metrics true',
    patch: { metrics: true },
    path: 'metrics',
    message: `${M}option "metrics" must be false or an object { registry?, prefix?, sampleIntervalMs? } (got true)`,
  },
  {
    name: 'metrics.prefix invalid',
    patch: { metrics: { prefix: '1bad-prefix' } },
    path: 'metrics.prefix',
    message: `${M}option "metrics.prefix" must be a Prometheus name prefix matching [a-zA-Z_:][a-zA-Z0-9_:]* (got "1bad-prefix")`,
  },
  {
    name: 'metrics.registry not a registry',
    patch: { metrics: { registry: {} } },
    path: 'metrics.registry',
    message: `${M}option "metrics.registry" must be a prom-client Registry (an object with registerMetric() and metrics()) (got an object)`,
  },
  {
    name: 'metrics.sampleIntervalMs too small',
    patch: { metrics: { sampleIntervalMs: 5 } },
    path: 'metrics.sampleIntervalMs',
    message: `${M}option "metrics.sampleIntervalMs" must be an integer between 100 and 3600000 (got 5)`,
  },
  {
    name: 'metrics misspelt key',
    patch: { metrics: { registery: {} } },
    path: 'metrics.registery',
    message: `${M}option "metrics.registery" is not a known option; did you mean "metrics.registry"?`,
  },
  {
    name: 'logger a string',
    patch: { logger: 'debug' },
    path: 'logger',
    message: `${M}option "logger" must be true, false or a LoggerService (an object with log(), error() and warn()) (got "debug")`,
  },
  {
    name: 'handlerFastPath not a boolean',
    patch: { handlerFastPath: 1 },
    path: 'handlerFastPath',
    message: `${M}option "handlerFastPath" must be true or false (got 1)`,
  },
  {
    name: 'readerClient not one of its values',
    patch: { readerClient: 'ioredis6' },
    path: 'readerClient',
    message: `${M}option "readerClient" must be "direct", "bundled" or "application" (got "ioredis6")`,
  },
  {
    name: 'misspelt top-level key',
    patch: { coordinatorURL: 'http://x' },
    path: 'coordinatorURL',
    message: `${M}option "coordinatorURL" is not a known option; did you mean "coordinatorUrl"?`,
  },
  {
    name: 'unknown top-level key without a near match',
    patch: { kafkaBrokers: ['b:9092'] },
    path: 'kafkaBrokers',
    message: `${M}option "kafkaBrokers" is not a known option; remove it; known options here: coordinatorUrl, token, redis, group, memberId, instanceId, rackId, assignor, rebalanceTimeoutMs, handlerDefaults, publishOnly, shutdownTimeoutMs, leaveOnShutdown, requestTimeoutMs, serializer, metrics, logger, handlerFastPath, readerClient`,
  },
  {
    name: 'several problems at once',
    patch: { group: '', handlerDefaults: { batchSize: 0 } },
    path: 'group',
    message: `${M}option "group" must be a name of 1–128 characters from [A-Za-z0-9._-] (got an empty string); the group is also the Redis consumer group on every shard; also: option "handlerDefaults.batchSize" must be an integer between 1 and 10000 (got 0)`,
  },
];
