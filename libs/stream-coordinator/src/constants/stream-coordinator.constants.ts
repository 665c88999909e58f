/**
 * Injection tokens, metadata keys and defaults of the stream coordinator module. Every string is
 * namespaced `STREAM_COORDINATOR:…` so it cannot clash with another library's keys.
 */

/**
 * Token of the options exactly as the application passed them (`forRoot` argument or what the
 * `forRootAsync` factory returned). Only the resolved-options provider reads it.
 *
 * @internal
 */
export const STREAM_COORDINATOR_RAW_OPTIONS = 'STREAM_COORDINATOR:RAW_OPTIONS';

/**
 * Token of the validated options with every default filled
 * ({@link ResolvedStreamCoordinatorOptions}). Inject it with `@InjectStreamCoordinatorOptions()`.
 */
export const STREAM_COORDINATOR_OPTIONS = 'STREAM_COORDINATOR:OPTIONS';

/**
 * Method metadata written by `@StreamShardHandler`: `{ stream, options }`.
 *
 * @internal
 */
export const STREAM_SHARD_HANDLER_METADATA = 'STREAM_COORDINATOR:STREAM_SHARD_HANDLER';

/**
 * Method metadata written by `@ShardContext()`: the parameter indexes that receive the
 * `StreamShardContext`. Kept apart from Nest's route-args metadata so that pipes never see the
 * context (as `@Ctx()` in `@nestjs/microservices`).
 *
 * @internal
 */
export const SHARD_CONTEXT_PARAMS_METADATA = 'STREAM_COORDINATOR:SHARD_CONTEXT_PARAMS';

/**
 * Param type under which `@ShardMessage()` (and the implicit first parameter of a handler without
 * parameter decorators) is stored in Nest's route-args metadata (`ROUTE_ARGS_METADATA`). Storing it
 * there is what makes Nest register the parameter's pipes as injectables at scan time and what
 * `ExternalContextCreator` reads to run pipes.
 *
 * The value is 3, Nest's `RouteParamtypes.BODY`, the same number `@nestjs/microservices` uses for
 * `@Payload()` (`RpcParamtype.PAYLOAD`): pipes then see `metadata.type === 'body'`, so a
 * `ValidationPipe` validates messages as it validates RPC payloads (any other number would reach
 * pipes as `'custom'`, which `ValidationPipe` skips by default). A microservice `@Payload()` put
 * on a stream handler therefore works as `@ShardMessage()`.
 *
 * @internal
 */
export const SHARD_MESSAGE_PARAMTYPE = 3;

/**
 * Defaults of the module options.
 *
 * @internal
 */
export const STREAM_COORDINATOR_DEFAULTS = {
  rebalanceTimeoutMs: 60_000,
  shutdownTimeoutMs: 30_000,
  requestTimeoutMs: 5_000,
  metricsPrefix: 'stream_coordinator_',
  metricsSampleIntervalMs: 5_000,
  handlerFastPath: true,
  readerClient: 'direct',
  isGlobal: true,
} as const;

/**
 * Defaults of every `@StreamShardHandler` option (overridable module-wide with `handlerDefaults`).
 *
 * @internal
 */
export const STREAM_SHARD_HANDLER_DEFAULTS = {
  concurrency: 16,
  batchSize: 100,
  blockMs: 2_000,
  maxDeliveries: 5,
  retry: { initialDelayMs: 100, maxDelayMs: 5_000, multiplier: 2 },
  deadLetter: true,
  nonRetryable: [],
  ordering: 'shard',
  maxConcurrency: 16,
  maxBufferedEntries: 200,
  batch: undefined,
  startFrom: 'earliest',
} as const;

/**
 * Bounds of the numeric options (inclusive). Exported so the documentation and the tests read
 * the same numbers as the validation.
 *
 * @internal
 */
export const OPTION_LIMITS = {
  rebalanceTimeoutMs: { min: 1, max: 3_600_000 },
  shutdownTimeoutMs: { min: 1, max: 3_600_000 },
  requestTimeoutMs: { min: 1, max: 600_000 },
  concurrency: { min: 1, max: 1024 },
  maxConcurrency: { min: 1, max: 1024 },
  maxBufferedEntries: { min: 1, max: 100_000 },
  batchSize: { min: 1, max: 10_000 },
  batchMaxSize: { min: 1, max: 10_000 },
  batchMaxWaitMs: { min: 0, max: 60_000 },
  blockMs: { min: 1, max: 300_000 },
  maxDeliveries: { min: 1, max: 1000 },
  retryDelayMs: { min: 0, max: 3_600_000 },
  retryMultiplier: { min: 1, max: 100 },
  metricsSampleIntervalMs: { min: 100, max: 3_600_000 },
} as const;

/**
 * Metadata key `@ExactlyOnce()` (the `/postgres` entry point) sets on a handler method; read by
 * the handler explorer to refuse options exactly-once cannot keep its promise under.
 *
 * @internal
 */
export const EXACTLY_ONCE_METADATA = 'rsc:exactly-once';

/**
 * Marks `ExactlyOnceInterceptor` (a static property of the class set to `true`), so the handler
 * explorer recognises it among a handler's interceptors without importing `/postgres`.
 *
 * @internal
 */
export const EXACTLY_ONCE_INTERCEPTOR_MARKER: unique symbol = Symbol.for(
  'rsc:exactly-once-interceptor',
);

/**
 * Token of the `ExactlyOnceAppliedCheck` `PostgresExactlyOnceModule` provides (optional: absent
 * without the `/postgres` entry point), so the handler explorer can use it without importing `pg`.
 *
 * @internal
 */
export const EXACTLY_ONCE_APPLIED_CHECK = 'STREAM_COORDINATOR:EXACTLY_ONCE_APPLIED_CHECK';
