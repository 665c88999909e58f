import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DescribedGroup, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import type { Redis } from 'ioredis';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { freePort } from '../../support/free-port.js';
import { uniquePrefix } from '../../support/redis.js';
import {
  buildRedisClockShim,
  type RedisClockShim,
} from '../../support/redis-clock/redis-clock-shim.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/restartable-redis.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { WorkerProcess } from '../../support/worker-process.js';
import type { ChaosConfig } from './chaos-config.js';
import { CoordinatorFront } from './coordinator-front.js';
import { connectRedis } from '../../support/redis-client.js';

/** The logical stream of every chaos run, and its group. */
export const CHAOS_STREAM = 'orders';
export const CHAOS_GROUP = 'chaos';
/**
 * A second group on the same stream whose members all stop before a reshard and come back after
 * the new layout is published (the `idle-group-reshard` fault); checked like the first one.
 */
export const CHAOS_IDLE_GROUP = 'chaos-idle';
/** The idle group's members (always both running, except during an `idle-group-reshard` fault). */
export const CHAOS_IDLE_MEMBERS = ['idle1', 'idle2'] as const;

/** One member of the run: a member id, its front to the coordinators, its processes so far. */
export interface ChaosMember {
  /** The member id (`MEMBER_ID`) — kept across restarts of the same member. */
  readonly name: string;
  /** The consumer group it joins. */
  readonly group: string;
  readonly front: CoordinatorFront;
  /** The running process, if any. */
  process: WorkerProcess | null;
  /** Processes started so far (one record file each). */
  incarnations: number;
  /** Record file of every incarnation. */
  readonly recordFiles: string[];
  /** The output of earlier incarnations (kept for diagnosis). */
  readonly pastOutput: string[];
  frozen: boolean;
}

/** One coordinator replica: a fixed port, so a restart comes back where the fronts expect it. */
export interface ChaosReplica {
  readonly name: string;
  readonly port: number;
  process: CoordinatorProcess | null;
  readonly pastOutput: string[];
}

/**
 * The processes of one chaos run, on loopback: a restartable Redis with AOF, two coordinator
 * replicas on one key prefix, example-worker members each behind its own
 * {@link CoordinatorFront} (so one member can be cut off from the coordinators but not from
 * Redis), and an admin front the harness and the producer use.
 */
export class ChaosCluster {
  readonly members = new Map<string, ChaosMember>();
  private adminRedis: Redis | null = null;

  private constructor(
    readonly config: ChaosConfig,
    readonly prefix: string,
    readonly redis: RestartableRedis,
    /** Redis's wall clock (the `step-redis-clock` fault sets it). */
    readonly redisClock: RedisClockShim,
    readonly replicas: readonly [ChaosReplica, ChaosReplica],
    readonly adminFront: CoordinatorFront,
    readonly dir: TempDir,
    private readonly log: (line: string) => void,
  ) {}

  /** Starts Redis, both replicas and the stream (no members yet). */
  static async start(config: ChaosConfig, log: (line: string) => void): Promise<ChaosCluster> {
    const dir = createTempDir('chaos');
    const clock = await buildRedisClockShim();
    let redis: RestartableRedis;
    try {
      redis = await startRestartableRedis({ env: clock.env });
    } catch (error) {
      clock.remove();
      dir.remove();
      throw error;
    }
    const ports = [await freePort(), await freePort()];
    const replicas: [ChaosReplica, ChaosReplica] = [
      { name: 'A', port: ports[0] as number, process: null, pastOutput: [] },
      { name: 'B', port: ports[1] as number, process: null, pastOutput: [] },
    ];
    const adminFront = await CoordinatorFront.start(() => replicas.map((r) => r.port));
    const cluster = new ChaosCluster(
      config,
      uniquePrefix('chaos'),
      redis,
      clock,
      replicas,
      adminFront,
      dir,
      log,
    );
    try {
      await Promise.all(replicas.map((r) => cluster.startReplica(r.name)));
      const created = await cluster.admin().put(`/v1/streams/${CHAOS_STREAM}`, {
        shards: config.shards,
      });
      if (created.status !== 201) {
        throw new Error(`PUT stream → ${created.status} ${JSON.stringify(created.body)}`);
      }
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** The admin API through the admin front (reaches whichever replica is up). */
  admin(): CoordinatorApi {
    return new CoordinatorApi(this.adminFront.url, TEST_TOKENS.admin);
  }

  /** A client of the run's Redis (one, shared; reconnects across restarts). */
  redisClient(): Redis {
    this.adminRedis ??= connectRedis(this.redis.url, {
      maxRetriesPerRequest: 3,
      commandTimeout: 5000,
      retryStrategy: (times) => Math.min(50 * times, 500),
    });
    this.adminRedis.on('error', () => undefined);
    return this.adminRedis;
  }

  replica(name: string): ChaosReplica {
    const replica = this.replicas.find((r) => r.name === name);
    if (!replica) throw new Error(`no coordinator replica ${name}`);
    return replica;
  }

  /** Starts (or restarts) a replica on its port; resolves when it is ready. */
  async startReplica(name: string): Promise<void> {
    const replica = this.replica(name);
    if (replica.process?.running) return;
    if (replica.process) replica.pastOutput.push(replica.process.output());
    replica.process = await CoordinatorProcess.start({
      prefix: this.prefix,
      redisUrl: this.redis.url,
      port: replica.port,
      readyTimeoutMs: this.config.readyTimeoutMs,
      env: {
        HEARTBEAT_INTERVAL_MS: String(this.config.heartbeatIntervalMs),
        SESSION_TIMEOUT_MS: String(this.config.sessionTimeoutMs),
        RESHARD_POLL_MS: '100',
        // the checker needs the whole event log (the ownership timeline)
        EVENT_LOG_MAXLEN: '100000000',
        LOG_LEVEL: 'warn',
      },
    });
  }

  /** Stops a replica: SIGKILL (a crash) or SIGTERM (a clean shutdown). */
  async stopReplica(name: string, signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    const replica = this.replica(name);
    await replica.process?.stop(signal);
  }

  /** Ports of the replicas (the fronts try each in turn). */
  replicaPorts(): number[] {
    return this.replicas.map((r) => r.port);
  }

  /** Extra environment of every member process (the exactly-once profile's database). */
  workerEnv: Readonly<Record<string, string>> = {};

  /** Starts a member's next process (a new member, or the same member id again after it stopped). */
  async startMember(name: string, group: string = CHAOS_GROUP): Promise<ChaosMember> {
    let member = this.members.get(name);
    if (!member) {
      const front = await CoordinatorFront.start(() => this.replicaPorts());
      member = {
        name,
        group,
        front,
        process: null,
        incarnations: 0,
        recordFiles: [],
        pastOutput: [],
        frozen: false,
      };
      this.members.set(name, member);
    }
    if (member.process?.running) throw new Error(`member ${name} is already running`);
    if (member.process) member.pastOutput.push(member.process.output());
    member.incarnations++;
    const recordFile = join(this.dir.path, `${name}.${member.incarnations}.jsonl`);
    member.recordFiles.push(recordFile);
    member.front.heal({ cut: true });
    member.front.responseDelayMs = 0;
    member.frozen = false;
    member.process = await WorkerProcess.start({
      coordinatorUrl: member.front.url,
      redisUrl: this.redis.url,
      group: member.group,
      recordFile,
      env: {
        MEMBER_ID: name,
        HANDLER_DELAY_MS: String(handlerDelayOf(name, this.config)),
        SHUTDOWN_TIMEOUT_MS: '5000',
        ORDERING: this.config.ordering,
        ...this.workerEnv,
      },
      readyTimeoutMs: this.config.readyTimeoutMs,
    });
    return member;
  }

  /** Members with a running process. */
  liveMembers(): ChaosMember[] {
    return [...this.members.values()].filter((m) => m.process?.running === true);
  }

  /** Every record file of every member of `group`. */
  recordFiles(group: string = CHAOS_GROUP): string[] {
    return [...this.members.values()]
      .filter((m) => m.group === group)
      .flatMap((m) => m.recordFiles);
  }

  /** `GET /v1/groups/{group}` (null before it exists or while no replica answers). */
  async describe(group: string = CHAOS_GROUP): Promise<DescribedGroup | null> {
    try {
      const res = await this.admin().get<DescribedGroup>(`/v1/groups/${group}`);
      return res.status === 200 ? res.body : null;
    } catch {
      return null;
    }
  }

  /** `GET /v1/streams/orders`. */
  async routing(): Promise<StreamRouting> {
    const res = await this.admin().get<StreamRouting>(`/v1/streams/${CHAOS_STREAM}`);
    if (res.status !== 200) {
      throw new Error(
        `GET /v1/streams/${CHAOS_STREAM} → ${res.status} ${JSON.stringify(res.body)}`,
      );
    }
    return res.body;
  }

  /** Recent warnings and errors of every process (for failure messages). */
  diagnostics(perProcess = 12): string {
    const tail = (name: string, output: string, running: boolean): string => {
      const lines = output
        .split('\n')
        .filter((l) => /WARN|ERROR|error|Error/.test(l))
        .slice(-perProcess)
        .map((l) => `    ${stripAnsi(l).slice(0, 400)}`);
      return `  ${name}${running ? '' : ' (not running)'}:\n${lines.join('\n') || '    (nothing)'}`;
    };
    return [
      ...this.replicas.map((r) =>
        tail(`coordinator ${r.name}`, r.process?.output() ?? '', r.process?.running ?? false),
      ),
      ...[...this.members.values()].map((m) =>
        tail(`member ${m.name}`, m.process?.output() ?? '', m.process?.running ?? false),
      ),
    ].join('\n');
  }

  /** Stops everything; keeps the run's files (copied next to the temp dir) when asked. */
  async close(keep = false): Promise<string | null> {
    await Promise.allSettled(
      [...this.members.values()].map(async (m) => {
        m.front.heal();
        await m.process?.stop('SIGKILL');
      }),
    );
    await Promise.allSettled(
      this.replicas.map(async (r) => {
        await r.process?.stop('SIGTERM');
      }),
    );
    let kept: string | null = null;
    if (keep) {
      kept = `${this.dir.path}-kept`;
      cpSync(this.dir.path, kept, { recursive: true });
      for (const m of this.members.values()) {
        writeFileSync(
          join(kept, `${m.name}.log`),
          [...m.pastOutput, m.process?.output() ?? ''].join('\n----- restart -----\n'),
        );
      }
      for (const r of this.replicas) {
        writeFileSync(
          join(kept, `coordinator-${r.name}.log`),
          [...r.pastOutput, r.process?.output() ?? ''].join('\n----- restart -----\n'),
        );
      }
    }
    await Promise.allSettled([...this.members.values()].map((m) => m.front.close()));
    await this.adminFront.close();
    this.adminRedis?.disconnect();
    await this.redis.dispose();
    this.redisClock.remove();
    this.dir.remove();
    return kept;
  }
}

/** The handler delay of member `name` (`m<n>`): one of the configured delays, by seed and number. */
export function handlerDelayOf(name: string, config: ChaosConfig): number {
  const n = Number(/\d+$/.exec(name)?.[0] ?? 0);
  const delays = config.handlerDelaysMs;
  return delays[(n + config.seed) % delays.length] ?? 1;
}

/** `line` without terminal colour codes. */
function stripAnsi(line: string): string {
  const [first = '', ...rest] = line.split(String.fromCharCode(27));
  return first + rest.map((part) => part.replace(/^\[[0-9;]*m/, '')).join('');
}
