import { Logger, type LoggerService } from '@nestjs/common';
import type { z } from 'zod';
import { InvalidModuleOptionsError } from '../errors/invalid-module-options.error.js';
import { defaultMemberId, type MemberIdStrategy } from '../identity/member-id.js';
import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import { ID_PATTERN } from '../protocol/limits.js';
import { JSON_PAYLOAD_SERIALIZER } from '../data-plane/json-payload.serializer.js';
import { NoopLogger } from './noop.logger.js';
import type {
  ResolvedMetricsOptions,
  ResolvedStreamCoordinatorOptions,
  ResolvedStreamShardHandlerOptions,
} from '../interfaces/resolved-stream-coordinator-options.interface.js';
import {
  STREAM_COORDINATOR_DEFAULTS,
  STREAM_SHARD_HANDLER_DEFAULTS,
} from '../constants/stream-coordinator.constants.js';
import type { OptionIssue } from '../constants/stream-coordinator.messages.js';
import {
  isPlainRecord,
  KNOWN_HANDLER_OPTION_KEYS,
  KNOWN_MODULE_OPTION_KEYS,
  moduleOptionsSchema,
  OPTION_RULES,
  ownHandlerOptionsSchema,
} from './stream-coordinator-options.schema.js';
import type {
  MetricsRegistryLike,
  StreamCoordinatorMetricsOptions,
  StreamCoordinatorModuleOptions,
} from '../interfaces/stream-coordinator-options.interface.js';

/** How to fix an option, where the rule alone does not say. */
const MODULE_OPTION_HINTS: Readonly<Record<string, string>> = {
  token: 'set COORDINATOR_TOKEN in the environment and pass token: process.env.COORDINATOR_TOKEN',
  coordinatorUrl: 'for example "http://127.0.0.1:7400"',
  group: 'the group is also the Redis consumer group on every shard',
  memberId: 'leave it out to derive one from the pod-IP context',
};

/** Options whose values never appear in messages. */
const SECRET_PATHS = new Set(['token']);

/**
 * Renders a value for an error message: short, and never the content of a secret.
 *
 * @internal
 */
export function renderReceived(value: unknown, secret = false): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    if (secret) return `a string of ${value.length} characters`;
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  }
  if (secret) return `a ${typeof value}`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return value.toString();
  if (Array.isArray(value)) return 'an array';
  const name = (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)
    ?.constructor?.name;
  return name && name !== 'Object' ? `an instance of ${name}` : 'an object';
}

function renderPath(path: readonly PropertyKey[]): string {
  return path
    .map((segment, index) =>
      typeof segment === 'number' ? `[${segment}]` : `${index === 0 ? '' : '.'}${String(segment)}`,
    )
    .join('');
}

/** Edit distance, for "did you mean" suggestions. */
function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const saved = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = saved;
    }
  }
  return row[b.length]!;
}

function suggestKey(key: string, known: readonly string[]): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of known) {
    const distance =
      candidate.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, candidate);
    if (best === undefined || distance < best.distance) best = { key: candidate, distance };
  }
  const tolerance = Math.max(2, Math.floor(key.length / 3));
  return best !== undefined && best.distance <= tolerance ? best.key : undefined;
}

/**
 * Turns zod issues into {@link OptionIssue}s: the path, the rule text and the rendered value;
 * one issue per unknown key with a suggestion.
 */
function toOptionIssues(
  issues: readonly z.core.$ZodIssue[],
  knownKeys: Readonly<Record<string, readonly string[]>>,
  hints: Readonly<Record<string, string>>,
  pathPrefix: string,
): OptionIssue[] {
  const join = (path: string) =>
    pathPrefix === '' ? path : path === '' ? pathPrefix : `${pathPrefix}.${path}`;
  const result: OptionIssue[] = [];
  for (const issue of issues) {
    const path = renderPath(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const known = knownKeys[path] ?? [];
      for (const key of issue.keys) {
        const suggestion = suggestKey(key, known);
        result.push({
          path: join(path === '' ? key : `${path}.${key}`),
          problem: 'is not a known option',
          received: undefined,
          hint: suggestion
            ? `did you mean "${join(path === '' ? suggestion : `${path}.${suggestion}`)}"?`
            : `remove it; known options here: ${known.join(', ')}`,
        });
      }
      continue;
    }
    const hint = hints[path];
    result.push({
      path: join(path),
      problem: issue.message,
      received: renderReceived(issue.input, SECRET_PATHS.has(path)),
      ...(hint === undefined ? {} : { hint }),
    });
  }
  return result;
}

/**
 * Validates raw module options (what `forRoot` got or the async factory returned). Returns the
 * problems found; empty when the options are valid.
 *
 * @internal
 */
export function collectModuleOptionIssues(raw: unknown): OptionIssue[] {
  if (!isPlainRecord(raw)) {
    return [
      {
        path: '',
        problem: 'must be an object',
        received: renderReceived(raw),
        hint: 'pass the options to forRoot(), or return them from the forRootAsync() factory',
      },
    ];
  }
  const result = moduleOptionsSchema.safeParse(raw, { reportInput: true });
  const issues = result.success
    ? []
    : toOptionIssues(result.error.issues, KNOWN_MODULE_OPTION_KEYS, MODULE_OPTION_HINTS, '');
  if (result.success && raw.leaveOnShutdown === 'temporary' && raw.instanceId === undefined) {
    issues.push({
      path: 'leaveOnShutdown',
      problem: 'can be "temporary" only for a static member',
      received: '"temporary" without instanceId',
      hint: 'set instanceId (for example the StatefulSet pod name), or use "leave"',
    });
  }
  const retry = (raw.handlerDefaults as StreamShardHandlerOptions | undefined)?.retry;
  if (result.success && retry !== undefined) {
    issues.push(
      ...retryOrderIssues(
        mergeRetry(STREAM_SHARD_HANDLER_DEFAULTS.retry, retry),
        'handlerDefaults.retry',
      ),
    );
  }
  return issues;
}

/**
 * Validates the options of one `@StreamShardHandler` on their own (without defaults).
 *
 * @internal
 */
export function collectHandlerOptionIssues(raw: unknown): OptionIssue[] {
  if (raw === undefined) return [];
  if (!isPlainRecord(raw)) {
    return [{ path: '', problem: 'must be an object', received: renderReceived(raw) }];
  }
  const result = ownHandlerOptionsSchema.safeParse(raw, { reportInput: true });
  return result.success
    ? []
    : toOptionIssues(result.error.issues, KNOWN_HANDLER_OPTION_KEYS, {}, '');
}

function mergeRetry(
  base: ResolvedStreamShardHandlerOptions['retry'],
  own: StreamShardHandlerOptions['retry'],
): ResolvedStreamShardHandlerOptions['retry'] {
  return {
    initialDelayMs: own?.initialDelayMs ?? base.initialDelayMs,
    maxDelayMs: own?.maxDelayMs ?? base.maxDelayMs,
    multiplier: own?.multiplier ?? base.multiplier,
  };
}

function retryOrderIssues(
  retry: ResolvedStreamShardHandlerOptions['retry'],
  path: string,
): OptionIssue[] {
  if (retry.initialDelayMs <= retry.maxDelayMs) return [];
  return [
    {
      path: `${path}.initialDelayMs`,
      problem: OPTION_RULES.retryOrder,
      received: `${retry.initialDelayMs}, with maxDelayMs ${retry.maxDelayMs}`,
      hint: 'raise maxDelayMs or lower initialDelayMs',
    },
  ];
}

/**
 * Merges a handler's own (already validated) options over resolved defaults, and checks the
 * merged result (the retry delays must be in order once both are known).
 *
 * @internal
 */
export function mergeHandlerOptions(
  defaults: ResolvedStreamShardHandlerOptions,
  own: StreamShardHandlerOptions | undefined,
): { options: ResolvedStreamShardHandlerOptions; issues: OptionIssue[] } {
  const options: ResolvedStreamShardHandlerOptions = {
    concurrency: own?.concurrency ?? defaults.concurrency,
    batchSize: own?.batchSize ?? defaults.batchSize,
    blockMs: own?.blockMs ?? defaults.blockMs,
    maxDeliveries: own?.maxDeliveries ?? defaults.maxDeliveries,
    retry: mergeRetry(defaults.retry, own?.retry),
    deadLetter: own?.deadLetter ?? defaults.deadLetter,
    nonRetryable: own?.nonRetryable ?? defaults.nonRetryable,
    ordering: own?.ordering ?? defaults.ordering,
    maxConcurrency: own?.maxConcurrency ?? defaults.maxConcurrency,
    maxBufferedEntries: own?.maxBufferedEntries ?? defaults.maxBufferedEntries,
    batch:
      own?.batch === undefined
        ? undefined
        : { maxSize: own.batch.maxSize, maxWaitMs: own.batch.maxWaitMs ?? 0 },
    startFrom: own?.startFrom ?? defaults.startFrom,
  };
  return {
    options,
    issues: [...retryOrderIssues(options.retry, 'retry'), ...batchOrderingIssues(options)],
  };
}

/** A batch handler takes one shard's messages in entry order: per-key dispatch cannot apply. */
function batchOrderingIssues(options: ResolvedStreamShardHandlerOptions): OptionIssue[] {
  if (options.batch === undefined || options.ordering !== 'key') return [];
  return [
    {
      path: 'ordering',
      problem: 'cannot be "key" on a batch handler',
      received: '"key", with batch',
      hint: 'drop `batch` to handle keys concurrently, or use ordering "shard" (the default) for batches',
    },
  ];
}

function resolveMemberId(option: StreamCoordinatorModuleOptions['memberId']): MemberIdStrategy {
  if (option === 'coordinator') return { kind: 'coordinator' };
  if (typeof option === 'string') return { kind: 'fixed', id: option, source: 'option' };
  if (option === undefined) return { kind: 'fixed', id: defaultMemberId(), source: 'default' };
  let id: unknown;
  try {
    id = option();
  } catch (error) {
    throw new InvalidModuleOptionsError([
      {
        path: 'memberId',
        problem: 'is a function that threw',
        received: error instanceof Error ? JSON.stringify(error.message) : renderReceived(error),
        hint: 'the function is called once at bootstrap and must return the member id',
      },
    ]);
  }
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) {
    throw new InvalidModuleOptionsError([
      {
        path: 'memberId',
        problem: `is a function that must return an id of 1–255 printable ASCII characters (0x21–0x7E)`,
        received: renderReceived(id),
      },
    ]);
  }
  return { kind: 'fixed', id, source: 'factory' };
}

function resolveLogger(option: StreamCoordinatorModuleOptions['logger']): LoggerService {
  if (option === false) return new NoopLogger();
  if (option === undefined || option === true) return new Logger('StreamCoordinator');
  return option;
}

function resolveMetrics(
  option: StreamCoordinatorMetricsOptions | false | undefined,
): ResolvedMetricsOptions | false {
  if (option === false) return false;
  return {
    registry: option?.registry as MetricsRegistryLike | undefined,
    prefix: option?.prefix ?? STREAM_COORDINATOR_DEFAULTS.metricsPrefix,
    sampleIntervalMs:
      option?.sampleIntervalMs ?? STREAM_COORDINATOR_DEFAULTS.metricsSampleIntervalMs,
  };
}

/**
 * Validates raw module options and fills every default. The one function behind the
 * `STREAM_COORDINATOR_OPTIONS` provider, so `forRoot` and `forRootAsync` validate alike. A
 * `memberId` function is called here, once.
 *
 * @throws InvalidModuleOptionsError naming the option at fault.
 * @internal
 */
export function resolveStreamCoordinatorOptions(raw: unknown): ResolvedStreamCoordinatorOptions {
  const issues = collectModuleOptionIssues(raw);
  if (issues.length > 0) throw new InvalidModuleOptionsError(issues);
  // Valid per the schema from here on.
  const options = raw as StreamCoordinatorModuleOptions;
  const handlerDefaults = mergeHandlerOptions(
    STREAM_SHARD_HANDLER_DEFAULTS,
    options.handlerDefaults,
  ).options;
  return Object.freeze({
    coordinatorUrl: options.coordinatorUrl.replace(/\/+$/, ''),
    token: options.token as string,
    redis: options.redis,
    group: options.group,
    memberId: resolveMemberId(options.memberId),
    instanceId: options.instanceId,
    rackId: options.rackId,
    assignor: options.assignor,
    rebalanceTimeoutMs:
      options.rebalanceTimeoutMs ?? STREAM_COORDINATOR_DEFAULTS.rebalanceTimeoutMs,
    handlerDefaults,
    publishOnly: options.publishOnly ?? 'auto',
    shutdownTimeoutMs: options.shutdownTimeoutMs ?? STREAM_COORDINATOR_DEFAULTS.shutdownTimeoutMs,
    leaveOnShutdown:
      options.leaveOnShutdown ?? (options.instanceId !== undefined ? 'temporary' : 'leave'),
    requestTimeoutMs: options.requestTimeoutMs ?? STREAM_COORDINATOR_DEFAULTS.requestTimeoutMs,
    serializer: options.serializer ?? JSON_PAYLOAD_SERIALIZER,
    metrics: resolveMetrics(options.metrics),
    logger: resolveLogger(options.logger),
    handlerFastPath: options.handlerFastPath ?? STREAM_COORDINATOR_DEFAULTS.handlerFastPath,
    readerClient: options.readerClient ?? STREAM_COORDINATOR_DEFAULTS.readerClient,
  });
}
