import type { Redis } from 'ioredis';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
} from '@redis-stream-coordinator/nestjs/internal';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../test/support/coordinator-process.js';
import type { BenchNode } from './bench-nodes.js';
import type { BenchProfile } from './bench-profile.js';
import { connectRedis } from '../../test/support/redis-client.js';

/** Everything a scenario needs: the one Redis of the run, a logger, the profile. */
export interface BenchContext {
  readonly redisUrl: string;
  /** A command connection for metering and cleanup. */
  readonly redis: Redis;
  readonly profile: BenchProfile;
  /** Progress lines on stderr. */
  log(line: string): void;
  /**
   * Environment that makes a process CPU-profile itself (the `cpu-profile-preload` through
   * NODE_OPTIONS) when the run profiles (`--cpu-prof`), else `{}`.
   */
  readonly profileEnv: (label: string) => Record<string, string>;
  /**
   * `--node=20,24`: the binaries the throughput and latency scenarios run their consumer and
   * producer processes on, each in the same run, interleaved; absent: the runner's own Node.
   */
  readonly nodes?: readonly BenchNode[];
}

/** Routing of one stream: its shard keys in shard order. */
export interface StreamInfo {
  readonly stream: string;
  readonly keys: readonly string[];
}

/** A coordinator process for one scenario, with its key prefix, admin API and publisher. */
export class BenchCoordinator {
  private publisherConnection: Redis | undefined;
  private cachedPublisher: StreamPublisher | undefined;

  private constructor(
    readonly process: CoordinatorProcess,
    readonly prefix: string,
    readonly api: CoordinatorApi,
    private readonly ctx: BenchContext,
    private readonly profiled: boolean,
  ) {}

  /** Starts a coordinator with a fresh key prefix (`env`: HEARTBEAT_INTERVAL_MS, …). */
  static async start(
    ctx: BenchContext,
    label: string,
    env: Record<string, string> = {},
    profileTriggered = false,
  ): Promise<BenchCoordinator> {
    const prefix = `bench-${label}-${Date.now().toString(36)}`;
    const profileEnv = ctx.profileEnv(`coordinator-${label}`);
    const process = await CoordinatorProcess.start({
      prefix,
      redisUrl: ctx.redisUrl,
      env: {
        LOG_LEVEL: 'error',
        ...profileEnv,
        ...(profileTriggered ? { BENCH_CPU_PROF_TRIGGER: '1' } : {}),
        ...env,
      },
      // generous: on a loaded machine a coordinator has taken more than 30 s to start
      readyTimeoutMs: 90_000,
    });
    return new BenchCoordinator(
      process,
      prefix,
      new CoordinatorApi(process.url, TEST_TOKENS.admin),
      ctx,
      profileTriggered && Object.keys(profileEnv).length > 0,
    );
  }

  /** Starts (first call) or stops and writes (second call) a triggered CPU profile. */
  toggleProfile(): void {
    const pid = this.process.pid;
    if (this.profiled && pid !== undefined) process.kill(pid, 'SIGWINCH');
  }

  get url(): string {
    return this.process.url;
  }

  /** Member-role token. */
  get token(): string {
    return TEST_TOKENS.member;
  }

  /** Creates `stream` with `shards` shards and returns its shard keys. */
  async createStream(stream: string, shards: number): Promise<StreamInfo> {
    const created = await this.api.put(`/v1/streams/${stream}`, { shards });
    if (created.status !== 201 && created.status !== 200) {
      throw new Error(
        `benchmark: PUT /v1/streams/${stream} answered ${created.status}: ${JSON.stringify(created.body)}`,
      );
    }
    const routing = await this.api.get<{ shards: Array<{ id: number; key: string }> }>(
      `/v1/streams/${stream}`,
    );
    const keys = [...routing.body.shards].sort((a, b) => a.id - b.id).map((s) => s.key);
    return { stream, keys };
  }

  /** The library's routed publisher (one shared connection). */
  publisher(): StreamPublisher {
    if (this.cachedPublisher) return this.cachedPublisher;
    this.publisherConnection = connectRedis(this.ctx.redisUrl);
    const routing = new RoutingCache(
      new CoordinatorClient({ baseUrl: this.url, token: this.token, requestTimeoutMs: 10_000 }),
    );
    this.cachedPublisher = new StreamPublisher({ connection: this.publisherConnection, routing });
    return this.cachedPublisher;
  }

  /** Group description (state, members with assignments). */
  async describe(group: string): Promise<DescribedGroupLite | null> {
    const res = await this.api.get<DescribedGroupLite>(`/v1/groups/${group}`);
    return res.status === 200 ? res.body : null;
  }

  /** Stops the coordinator and deletes every key of its prefix. */
  async stop(): Promise<void> {
    this.publisherConnection?.disconnect();
    await this.process.stop('SIGTERM', 20_000);
    await deleteByPrefix(this.ctx.redis, this.prefix);
  }
}

/** The part of a group description the benchmarks read. */
export interface DescribedGroupLite {
  readonly state: string;
  readonly groupEpoch: number;
  readonly members: ReadonlyArray<{
    readonly memberId: string;
    readonly memberEpoch: number;
    readonly state: string;
    readonly assignment: ReadonlyArray<{
      readonly stream: string;
      readonly shards: readonly number[];
    }>;
  }>;
}

/** Deletes every key starting with `prefix:` (SCAN + UNLINK). */
export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}
