import type { LoggerService } from '@nestjs/common';
import type { PayloadSerializer } from './payload-serializer.interface.js';
import type { RedisConnectionOptions } from './redis-connection-options.interface.js';
import type { StreamShardHandlerOptions } from './stream-shard-handler-options.interface.js';

/**
 * The part of a prom-client `Registry` the library relies on. Typed structurally so that the
 * published declarations do not need `prom-client` installed; a prom-client `Registry` fits.
 *
 * @publicApi
 */
export interface MetricsRegistryLike {
  /** Adds a metric (prom-client's `registerMetric`). */
  registerMetric(metric: never): void;
  /** Renders every metric in the Prometheus text format. */
  metrics(): Promise<string>;
  /** The `Content-Type` of {@link MetricsRegistryLike.metrics}' output. */
  readonly contentType: string;
}

/**
 * Where the library's member-side metrics go.
 *
 * @publicApi
 */
export interface StreamCoordinatorMetricsOptions {
  /** Registry to register the metrics in. Default: prom-client's global registry. */
  registry?: MetricsRegistryLike;
  /** Prefix of every metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`). Default `stream_coordinator_`. */
  prefix?: string;
  /**
   * How often per-shard lag and pending counts are sampled with `XINFO GROUPS` (never on the
   * read path). Default 5000 ms.
   */
  sampleIntervalMs?: number;
}

/**
 * How this member names itself to the coordinator (docs/protocol.md §7):
 * - omitted: derived from the pod-IP context (`POD_IP` or the first non-internal IPv4 address,
 *   `POD_NAME`/`HOSTNAME`, the process id and a per-process counter);
 * - a string: used as is (1–255 printable ASCII characters);
 * - a function: called once at bootstrap, must return such a string;
 * - `'coordinator'`: the coordinator issues one (`POST /v1/groups/{groupId}/member-ids`).
 *
 * @publicApi
 */
export type MemberIdOption = 'coordinator' | (string & Record<never, never>) | (() => string);

/**
 * What the shard readers' dedicated connections are built with:
 * - `'direct'` (default): the library's own RESP2 connection, one socket per reader that sends
 *   only the reader's commands and parses their replies itself; it spends the least CPU per
 *   message. It serves a standalone Redis reached by URL or ioredis options (TCP, TLS, Unix
 *   socket; `username`/`password`, `db`, `connectTimeout`, `keepAlive`, `noDelay`). For Redis
 *   Cluster, Sentinel, or an ioredis option it does not implement (`commandTimeout`,
 *   `socketTimeout`, a custom `Connector`), readers use `'bundled'` instead;
 * - `'bundled'`: ioredis 5, the library's own dependency (npm alias `ioredis5`), whose reply
 *   decoder reads stream batches several times faster than ioredis 6.0.0's;
 * - `'application'`: your application's ioredis, like every other connection of the library. For
 *   when readers must carry fixes or instrumentation that only your copy has (an APM agent that
 *   patches `ioredis`, a security fix of ioredis 6), at the cost in CPU per message that
 *   docs/benchmarks.md measures.
 *
 * @publicApi
 */
export type ReaderClient = 'direct' | 'bundled' | 'application';

/**
 * Options of `StreamCoordinatorModule.forRoot()` (and what a `forRootAsync()` factory returns).
 * Unknown keys are rejected at bootstrap, so a misspelt option never passes silently.
 *
 * @publicApi
 */
export interface StreamCoordinatorModuleOptions {
  /** Base URL of the coordinator (`http://…` or `https://…`). */
  coordinatorUrl: string;
  /**
   * Member-role token sent as `Authorization: Bearer …`. `undefined` is accepted by the type so
   * `process.env.COORDINATOR_TOKEN` can be passed as is; a missing or empty token fails the
   * bootstrap with an error saying to set `COORDINATOR_TOKEN`.
   */
  token: string | undefined;
  /** The data plane: a Redis URL, ioredis options or a cluster node list. */
  redis: RedisConnectionOptions;
  /** Coordinator group (also the Redis consumer group on every shard): `[A-Za-z0-9._-]{1,128}`. */
  group: string;
  /** This member's id; see {@link MemberIdOption}. Default: derived from the pod-IP context. */
  memberId?: MemberIdOption;
  /** Static membership: an id that survives restarts (1–255 printable ASCII characters). */
  instanceId?: string;
  /** Rack (zone) of this member, for rack-aware assignors. */
  rackId?: string;
  /** Preferred server-side assignor (`uniform`, `range`, …). Default: the coordinator's. */
  assignor?: string;
  /** Longest time this member may take to release a revoked shard. Default 60000 ms. */
  rebalanceTimeoutMs?: number;
  /** Module-wide defaults of every `@StreamShardHandler` option. */
  handlerDefaults?: StreamShardHandlerOptions;
  /**
   * Only produce, never join the group. Default: `true` when the application has no
   * `@StreamShardHandler`, else `false`. An application without handlers never joins, even with
   * `publishOnly: false`.
   */
  publishOnly?: boolean;
  /** Bound on draining in-flight handlers at shutdown. Default 30000 ms. */
  shutdownTimeoutMs?: number;
  /**
   * What the leave heartbeat on shutdown says: `'leave'` (epoch -1: the shards move to other
   * members at once) or `'temporary'` (epoch -2, static members only: the shards stay reserved
   * for this `instanceId` until the session timeout, so a restarted pod gets them straight back,
   * as Kafka's static members do). Default: `'temporary'` with an `instanceId`, else `'leave'`.
   */
  leaveOnShutdown?: 'leave' | 'temporary';
  /** Timeout of one request to the coordinator. Default 5000 ms. */
  requestTimeoutMs?: number;
  /** Payload encoding. Default: JSON. */
  serializer?: PayloadSerializer;
  /** Member-side Prometheus metrics, or `false` for none. Default: enabled, global registry. */
  metrics?: StreamCoordinatorMetricsOptions | false;
  /** `false` silences the library, `true` (default) uses Nest's `Logger`, or pass a logger. */
  logger?: boolean | LoggerService;
  /**
   * Call a handler directly, bypassing Nest's enhancer pipeline, when no guard, interceptor, pipe
   * or exception filter can apply to it (none on its class, its method or its parameters, and none
   * registered globally). Default `true`. Global enhancers are detected when the library can read
   * them; when it cannot, every handler goes through the pipeline. Set `false` to always use the
   * pipeline (for instance when enhancers are registered after bootstrap).
   */
  handlerFastPath?: boolean;
  /** What the shard readers' connections are built with; see {@link ReaderClient}. Default `'direct'`. */
  readerClient?: ReaderClient;
}

/**
 * Extra options of `forRoot`/`forRootAsync` that shape the module itself.
 */
export interface StreamCoordinatorModuleExtras {
  /** Register the module globally (default `true`: one coordinator membership per application). */
  isGlobal?: boolean;
}
