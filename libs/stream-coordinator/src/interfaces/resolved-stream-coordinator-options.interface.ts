import type { ResolvedStreamShardBatchOptions } from './stream-shard-batch.interface.js';
import type { LoggerService } from '@nestjs/common';
import type { ExceptionClass, StartFrom } from './stream-shard-handler-options.interface.js';
import type { MemberIdStrategy } from '../identity/member-id.js';
import type { PayloadSerializer } from './payload-serializer.interface.js';
import type { RedisConnectionOptions } from './redis-connection-options.interface.js';
import type { MetricsRegistryLike, ReaderClient } from './stream-coordinator-options.interface.js';

/**
 * Backoff between deliveries, every field filled.
 */
export interface ResolvedRetryBackoffOptions {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  readonly multiplier: number;
}

/**
 * The options of one handler after merging its own options over `handlerDefaults` and the
 * library defaults.
 */
export interface ResolvedStreamShardHandlerOptions {
  readonly concurrency: number;
  readonly batchSize: number;
  readonly blockMs: number;
  readonly maxDeliveries: number;
  readonly retry: ResolvedRetryBackoffOptions;
  readonly deadLetter: boolean;
  /** Exception classes that dead-letter at once (empty: none besides `NonRetryableError`). */
  readonly nonRetryable: readonly ExceptionClass[];
  readonly ordering: 'shard' | 'key';
  readonly maxConcurrency: number;
  readonly maxBufferedEntries: number;
  /** Batch mode (a handler's own option); `undefined`: one message per call. */
  readonly batch: ResolvedStreamShardBatchOptions | undefined;
  readonly startFrom: StartFrom;
}

/**
 * Metrics settings with defaults filled.
 */
export interface ResolvedMetricsOptions {
  /** The registry to use; `undefined` means prom-client's global registry. */
  readonly registry: MetricsRegistryLike | undefined;
  readonly prefix: string;
  /** How often lag and pending are sampled, ms. */
  readonly sampleIntervalMs: number;
}

/**
 * The module options after validation, with every default filled. Provided under
 * `STREAM_COORDINATOR_OPTIONS`.
 */
export interface ResolvedStreamCoordinatorOptions {
  /** Coordinator base URL without trailing slashes. */
  readonly coordinatorUrl: string;
  readonly token: string;
  readonly redis: RedisConnectionOptions;
  readonly group: string;
  /** How the member id is obtained; the function form has already been called. */
  readonly memberId: MemberIdStrategy;
  readonly instanceId: string | undefined;
  readonly rackId: string | undefined;
  readonly assignor: string | undefined;
  readonly rebalanceTimeoutMs: number;
  readonly handlerDefaults: ResolvedStreamShardHandlerOptions;
  /** `'auto'` (not set): publish-only exactly when the application has no handler. */
  readonly publishOnly: boolean | 'auto';
  readonly shutdownTimeoutMs: number;
  /** The leave sent on shutdown (resolved: `'temporary'` needs an `instanceId`). */
  readonly leaveOnShutdown: 'leave' | 'temporary';
  readonly requestTimeoutMs: number;
  readonly serializer: PayloadSerializer;
  readonly metrics: ResolvedMetricsOptions | false;
  /** Always a logger: a no-op one for `logger: false`, Nest's `Logger` for `true`/unset. */
  readonly logger: LoggerService;
  readonly handlerFastPath: boolean;
  readonly readerClient: ReaderClient;
}
