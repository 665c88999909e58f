import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type {
  DescribedGroup,
  GroupEventEntry,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { Redis } from 'ioredis';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import {
  checkInvariants,
  fetchGroupEvents,
  formatInvariantReport,
  ownershipFromEvents,
  readDeadLetters,
  readPendingSnapshot,
  type InvariantInput,
  type InvariantOptions,
  type InvariantReport,
  type OwnershipInterval,
} from '../../support/invariants/index.js';
import { readRecordFiles } from '../../support/handled-records.js';
import { KeyedProducer } from '../../support/keyed-producer.js';
import { cleanupPrefix, redisUrl, uniquePrefix, createTestRedis } from '../../support/redis.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { WorkerProcess } from '../../support/worker-process.js';
import { waitFor } from '../../support/wait.js';

/** The stream every group run uses. */
export const STREAM = 'orders';

/** Options of {@link GroupRun.start}. */
export interface GroupRunOptions {
  readonly label: string;
  readonly group?: string;
  readonly shards?: number;
  readonly heartbeatIntervalMs?: number;
  readonly sessionTimeoutMs?: number;
}

/** A worker process of a run, with its record file. */
export interface RunWorker {
  /** Also its member id (`MEMBER_ID`). */
  readonly name: string;
  readonly process: WorkerProcess;
  readonly recordFile: string;
}

/** `line` without terminal colour codes. */
function stripAnsi(line: string): string {
  const [first = '', ...rest] = line.split(String.fromCharCode(27));
  return first + rest.map((part) => part.replace(/^\[[0-9;]*m/, '')).join('');
}

/**
 * One end-to-end group run: a real coordinator (its own key prefix, short heartbeat interval and
 * session timeout), example-worker child processes that record what they handle and ack, a
 * keyed producer, and at the end the invariant check over everything they left behind.
 */
export class GroupRun {
  readonly workers = new Map<string, RunWorker>();
  readonly api: CoordinatorApi;
  readonly producer: KeyedProducer;
  private routing: StreamRouting | undefined;
  /** What the last {@link check} read (kept with the run files). */
  private collected: Awaited<ReturnType<GroupRun['collect']>> | undefined;

  private constructor(
    readonly options: Required<GroupRunOptions>,
    readonly prefix: string,
    readonly coordinator: CoordinatorProcess,
    readonly redis: Redis,
    readonly dir: TempDir,
  ) {
    this.api = new CoordinatorApi(coordinator.url);
    this.producer = new KeyedProducer({
      redisUrl: redisUrl(),
      coordinatorUrl: coordinator.url,
      stream: STREAM,
    });
  }

  /** Starts the coordinator with `STREAMS=orders:<shards>`. */
  static async start(options: GroupRunOptions): Promise<GroupRun> {
    const resolved: Required<GroupRunOptions> = {
      group: 'e2e',
      shards: 8,
      heartbeatIntervalMs: 500,
      sessionTimeoutMs: 3000,
      ...options,
    };
    const prefix = uniquePrefix(options.label);
    const dir = createTempDir(options.label);
    const coordinator = await CoordinatorProcess.start({
      prefix,
      env: {
        STREAMS: `${STREAM}:${resolved.shards}`,
        HEARTBEAT_INTERVAL_MS: String(resolved.heartbeatIntervalMs),
        SESSION_TIMEOUT_MS: String(resolved.sessionTimeoutMs),
      },
    });
    const redis = createTestRedis();
    return new GroupRun(resolved, prefix, coordinator, redis, dir);
  }

  get group(): string {
    return this.options.group;
  }

  /** Starts an example worker with `MEMBER_ID=<name>` and its own record file. */
  async startWorker(name: string, env: Readonly<Record<string, string>> = {}): Promise<RunWorker> {
    const recordFile = join(this.dir.path, `${name}.jsonl`);
    const process = await WorkerProcess.start({
      coordinatorUrl: this.coordinator.url,
      group: this.group,
      recordFile,
      env: { MEMBER_ID: name, ...env },
      // generous: the suites share a small, busy machine
      readyTimeoutMs: 60_000,
    });
    const worker = { name, process, recordFile };
    this.workers.set(name, worker);
    return worker;
  }

  /** `GET /v1/groups/{group}` (null before the group exists). */
  async describe(): Promise<DescribedGroup | null> {
    const res = await this.api.get<DescribedGroup>(`/v1/groups/${this.group}`);
    return res.status === 200 ? res.body : null;
  }

  /** The shards `member` is assigned now (per describe). */
  async shardsOf(member: string): Promise<number[]> {
    const group = await this.describe();
    const m = group?.members.find((x) => x.memberId === member);
    return m ? m.assignment.flatMap((a) => a.shards) : [];
  }

  /**
   * Waits until exactly `members` are in the group, the group is STABLE and every shard is
   * assigned.
   */
  async waitForMembers(members: readonly string[], timeoutMs = 20_000): Promise<DescribedGroup> {
    let last: DescribedGroup | null = null;
    await waitFor(
      async () => {
        last = await this.describe();
        if (!last || last.state !== 'STABLE') return false;
        const ids = last.members.map((m) => m.memberId).sort();
        if (ids.join(',') !== [...members].sort().join(',')) return false;
        const assigned = last.members.flatMap((m) => m.assignment.flatMap((a) => a.shards));
        return (
          assigned.length === this.options.shards &&
          last.members.every((m) => m.assignment.length > 0)
        );
      },
      {
        timeoutMs,
        intervalMs: 20,
        message: () =>
          `group ${this.group} to be STABLE with members ${members.join(', ')} (last: ${JSON.stringify(last)})`,
      },
    );
    return last as unknown as DescribedGroup;
  }

  /** The stream's routing (shard keys, dead-letter key). */
  async streamRouting(): Promise<StreamRouting> {
    this.routing ??= (await this.api.get<StreamRouting>(`/v1/streams/${STREAM}`)).body;
    return this.routing;
  }

  /**
   * Waits until every shard is fully consumed: the group read up to the stream's last id and
   * nothing is pending.
   */
  async waitDrained(timeoutMs: number): Promise<void> {
    const { shards } = await this.streamRouting();
    let state = '';
    await waitFor(
      async () => {
        const parts: string[] = [];
        let done = true;
        for (const { id, key } of shards) {
          const [info, pending] = await Promise.all([
            this.redis.xinfo('STREAM', key).catch(() => null),
            this.redis.xpending(key, this.group).catch(() => null),
          ]);
          const fields = (info ?? []) as unknown[];
          const last = fields[fields.indexOf('last-generated-id') + 1] as string | undefined;
          const groups = (await this.redis.xinfo('GROUPS', key).catch(() => [])) as unknown[][];
          const g = groups.find((row) => row[row.indexOf('name') + 1] === this.group);
          const delivered = g ? (g[g.indexOf('last-delivered-id') + 1] as string) : '0-0';
          const count = pending ? Number((pending as unknown[])[0]) : 0;
          const caughtUp = last === undefined || last === '0-0' || delivered === last;
          if (!caughtUp || count > 0) done = false;
          parts.push(`${id}: pending ${count}${caughtUp ? '' : `, read ${delivered} of ${last}`}`);
        }
        state = parts.join('; ');
        return done;
      },
      {
        timeoutMs,
        intervalMs: 20,
        message: () => `every shard to be consumed and acked (${state})\n${this.workerWarnings()}`,
      },
    );
    // Redis applied the acks; a worker writes its ack record when it sees the reply, a moment
    // later. Wait for the records of running workers too, or the checker could read the files
    // in between (messages last handled by a stopped worker may have lost theirs in the crash).
    let missing = 0;
    await waitFor(
      () => {
        const records = readRecordFiles([...this.workers.values()].map((w) => w.recordFile));
        if (records.acks.length === 0) return true; // a run without ack records
        const acked = new Set(records.acks.flatMap((a) => a.a.map((id) => `${a.s}/${id}`)));
        const lastBy = new Map<string, string>();
        for (const h of [...records.handled].sort((a, b) => a.t0 - b.t0)) {
          lastBy.set(`${h.s}/${h.id}`, h.m);
        }
        const running = new Set(
          [...this.workers.values()].filter((w) => w.process.running).map((w) => w.name),
        );
        missing = 0;
        for (const [message, member] of lastBy) {
          if (!acked.has(message) && running.has(member)) missing++;
        }
        return missing === 0;
      },
      {
        timeoutMs,
        intervalMs: 20,
        message: () =>
          `the ack records of running workers (${missing} handled messages without one)`,
      },
    );
  }

  /** The last warnings and errors of every worker (for failure messages). */
  workerWarnings(perWorker = 8): string {
    return [...this.workers.values()]
      .map((w) => {
        const lines = w.process
          .output()
          .split('\n')
          .filter((l) => /WARN|ERROR/.test(l))
          .slice(-perWorker)
          .map((l) => `    ${stripAnsi(l)}`);
        return `  ${w.name}${w.process.running ? '' : ' (exited)'}:\n${lines.join('\n') || '    (no warnings)'}`;
      })
      .join('\n');
  }

  /** The group's event log. */
  events(): Promise<GroupEventEntry[]> {
    return fetchGroupEvents(this.coordinator.url, TEST_TOKENS.admin, this.group);
  }

  /** Everything the invariant checker needs, read now. */
  async collect(): Promise<{
    input: InvariantInput;
    events: GroupEventEntry[];
    ownership: OwnershipInterval[];
    unreadable: number;
  }> {
    const routing = await this.streamRouting();
    const records = readRecordFiles([...this.workers.values()].map((w) => w.recordFile));
    const events = await this.events();
    const ownership = ownershipFromEvents(events);
    const input: InvariantInput = {
      stream: STREAM,
      produced: this.producer.produced,
      handled: records.handled,
      acks: records.acks.length > 0 ? records.acks : null,
      ownership,
      pending: await readPendingSnapshot(this.redis, this.group, routing.shards),
      deadLettered: await readDeadLetters(this.redis, routing.deadLetterKey),
      // A member killed after Redis applied an ack, before it wrote the ack's record: the
      // checker counts its messages as `ackRecordLostInCrash`, not as lost.
      crashes: [...this.workers.values()].flatMap((w) =>
        w.process.sigkilledAt.map((at) => ({ memberId: w.name, at })),
      ),
    };
    return { input, events, ownership, unreadable: records.unreadable };
  }

  /** Collects, checks and prints the summary table. */
  async check(
    title: string,
    options?: InvariantOptions,
  ): Promise<{
    report: InvariantReport;
    input: InvariantInput;
    events: GroupEventEntry[];
    ownership: OwnershipInterval[];
  }> {
    const collected = await this.collect();
    this.collected = collected;
    const report = checkInvariants(collected.input, options);
    process.stdout.write(`\n${formatInvariantReport(report, title)}\n`);
    if (collected.unreadable > 0)
      process.stdout.write(`(${collected.unreadable} unreadable record lines)\n`);
    return { report, ...collected };
  }

  /** Stops every worker and the coordinator, deletes the run's keys and files. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.workers.values()].map((w) => w.process.stop()));
    this.producer.close();
    await this.coordinator.stop();
    await cleanupPrefix(this.redis, this.prefix).catch(() => undefined);
    this.redis.disconnect();
    if (process.env.E2E_KEEP_RUN_FILES) {
      // debugging: keep the record files, the workers' output, the checker's input and the
      // event log
      const kept = `${this.dir.path}-kept`;
      cpSync(this.dir.path, kept, { recursive: true });
      for (const w of this.workers.values())
        writeFileSync(join(kept, `${w.name}.log`), w.process.output());
      if (this.collected) {
        // the checker's input as the last check read it (with the event log)
        const { input, events } = this.collected;
        const pending = input.pending ? [...input.pending.byShard] : null;
        writeFileSync(
          join(kept, 'checker-input.json'),
          JSON.stringify({ ...input, pending, events }),
        );
      }
      process.stdout.write(`run files kept in ${kept}\n`);
    }
    this.dir.remove();
  }
}
