import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type DescribedGroup,
  type GroupEventEntry,
  KeySpace,
} from '@redis-stream-coordinator/nestjs/protocol';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import {
  checkInvariants,
  eventsOnMachineClock,
  fetchGroupEvents,
  formatInvariantReport,
  ownershipFromEvents,
  readDeadLetters,
  readPendingSnapshot,
  type InvariantInput,
  type InvariantReport,
  type MemberCrash,
  type ProducedMessage,
  type RedisClockStep,
} from '../../support/invariants/index.js';
import { readRecordFiles } from '../../support/handled-records.js';
import type { ChaosConfig } from './chaos-config.js';
import {
  CHAOS_GROUP,
  CHAOS_IDLE_GROUP,
  CHAOS_IDLE_MEMBERS,
  CHAOS_STREAM,
  ChaosCluster,
  handlerDelayOf,
} from './chaos-cluster.js';
import { ChaosProducer } from './chaos-producer.js';
import { deliveredKey, FaultInjector, type RecordedRollback } from './fault-injector.js';
import { type FaultSchedule, formatSchedule, planFaults } from './fault-schedule.js';
import { ClockStepWatch, formatClockSteps } from './clock-step-watch.js';
import { SeededRandom } from './seeded-random.js';
import { waitForNoProblems } from '../../support/wait.js';
import {
  checkEffects,
  type EffectsReport,
  formatEffectsReport,
  SNAPSHOT_SLACK_MS,
} from '../../support/effects-check.js';
import { createTestSchema } from '../../support/postgres-schema.js';

/** What a chaos run leaves for the test to assert on. */
export interface ChaosOutcome {
  readonly config: ChaosConfig;
  readonly schedule: FaultSchedule;
  readonly report: InvariantReport;
  /** The same checks for the idle group (its members stop before a reshard, come back after). */
  readonly idleReport: InvariantReport;
  /** The printed summary (seed, schedule, timeline, invariant table). */
  readonly summary: string;
  /**
   * What the fault actions did, one line each, with the wall-clock time each started, then any
   * step of the wall clock seen during the run.
   */
  readonly timeline: readonly string[];
  /** Actions that failed (a member that would not start, a replica that would not come back). */
  readonly failedActions: readonly string[];
  /** Members expected to run at the end that had exited on their own. */
  readonly unexpectedExits: readonly string[];
  /** Record-file lines that were not JSON (a crash mid-write). */
  readonly unreadableLines: number;
  readonly events: number;
  readonly timings: Readonly<Record<string, number>>;
  /** Where the run's files were kept (`CHAOS_KEEP_FILES=1`, or after a failure). */
  readonly keptFiles: string | null;
  /** The exactly-once profile's effect check of the main and the idle group (else null). */
  readonly effects: { readonly main: EffectsReport; readonly idle: EffectsReport } | null;
}

/** The run failed before the check could run (the cluster never settled, say). */
export class ChaosRunError extends Error {
  override readonly name = 'ChaosRunError';
}

/**
 * One chaos run: start the cluster and the initial members, produce keyed traffic while the
 * seeded fault schedule runs, quiesce (producer stopped, every fault healed, reshard finished,
 * group stable, every shard read to its end and nothing pending), then check every invariant on
 * what the members recorded, the coordinator's event log and the final Redis state.
 */
export async function runChaos(
  config: ChaosConfig,
  log: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
): Promise<ChaosOutcome> {
  const schedule = planFaults(config, config.seed);
  const header = [
    `chaos run: profile ${config.profile}, seed ${config.seed}, ordering ${config.ordering} (repeat with CHAOS_SEED=${config.seed}${config.ordering === 'key' ? ' CHAOS_ORDERING=key' : ''}${config.profile === 'soak' ? ' npm run soak' : ' npm run test:chaos'})`,
    `  ${config.durationMs / 1000} s of faults, ${config.initialMembers} members at start (${config.minMembers}–${config.maxMembers}), ${config.shards} shards, ${config.ratePerSecond} msg/s over ${config.keys} keys, session timeout ${config.sessionTimeoutMs} ms`,
    formatSchedule(schedule),
  ].join('\n');
  log(header);
  const timings: Record<string, number> = {};
  const t0 = performance.now();
  const mark = (name: string): void => {
    timings[name] = Math.round(performance.now() - t0);
  };
  const random = new SeededRandom(config.seed).fork();
  const clock = new ClockStepWatch();
  clock.start();
  const cluster = await ChaosCluster.start(config, log);
  const db = config.exactlyOnce ? await createTestSchema('chaos_eo') : undefined;
  if (db !== undefined) {
    // idle_in_transaction_session_timeout: a frozen member's open transaction is aborted
    const url = new URL(db.url);
    url.searchParams.set(
      'options',
      `${url.searchParams.get('options')} -c idle_in_transaction_session_timeout=3000`,
    );
    cluster.workerEnv = { EXACTLY_ONCE_DATABASE_URL: url.toString() };
    log(`exactly-once profile: PostgreSQL schema ${db.schema}`);
  }
  let producer: ChaosProducer | undefined;
  let failed = true;
  let keptFiles: string | null = null;
  try {
    await Promise.all([
      ...schedule.initialMembers.map((m) => cluster.startMember(m)),
      ...CHAOS_IDLE_MEMBERS.map((m) => cluster.startMember(m, CHAOS_IDLE_GROUP)),
    ]);
    await waitForGroup(cluster, CHAOS_GROUP, schedule.initialMembers, 60_000);
    await waitForGroup(cluster, CHAOS_IDLE_GROUP, CHAOS_IDLE_MEMBERS, 60_000);
    mark('settledMs');
    producer = new ChaosProducer({
      redisUrl: cluster.redis.url,
      coordinatorUrl: cluster.adminFront.url,
      token: TEST_TOKENS.member,
      stream: CHAOS_STREAM,
      keys: config.keys,
      ratePerSecond: config.ratePerSecond,
      random,
      log,
    });
    producer.start();
    const injector = new FaultInjector(cluster, log);
    await injector.run(schedule);
    mark('faultsDoneMs');
    await producer.stop();
    mark('producerStoppedMs');
    const expected = expectedMembers(schedule);
    const unexpectedExits = [...expected, ...CHAOS_IDLE_MEMBERS].filter(
      (m) => cluster.members.get(m)?.process?.running !== true,
    );
    const survivors = expected.filter((m) => !unexpectedExits.includes(m));
    const idleSurvivors = CHAOS_IDLE_MEMBERS.filter((m) => !unexpectedExits.includes(m));
    await quiesce(
      cluster,
      [
        { group: CHAOS_GROUP, members: survivors },
        { group: CHAOS_IDLE_GROUP, members: idleSurvivors },
      ],
      config.quiesceTimeoutMs,
    );
    mark('quiescedMs');
    const copies = producer.adoptHandledCopies(
      [CHAOS_GROUP, CHAOS_IDLE_GROUP].flatMap(
        (group) => readRecordFiles(cluster.recordFiles(group)).handled,
      ),
    );

    const collected = await collect(
      cluster,
      producer,
      injector.crashes,
      injector.rollbacks,
      injector.clockSteps,
      CHAOS_GROUP,
    );
    const { input, events } = collected;
    const idle = await collect(
      cluster,
      producer,
      [],
      injector.rollbacks,
      injector.clockSteps,
      CHAOS_IDLE_GROUP,
    );
    const unreadable = collected.unreadable + idle.unreadable;
    const checkOptions = { ordering: config.ordering };
    const report = checkInvariants(input, checkOptions);
    const idleReport = checkInvariants(idle.input, checkOptions);
    const effects =
      db === undefined
        ? null
        : {
            main: await checkEffects(db.pool, input, CHAOS_GROUP),
            idle: await checkEffects(db.pool, idle.input, CHAOS_IDLE_GROUP),
          };
    mark('checkedMs');
    const timeline = [
      ...injector.timeline(),
      ...formatClockSteps(clock.stop()).map((l) => `  ${l}`),
    ];
    const summary = [
      header,
      'what happened:',
      ...timeline,
      `producer: ${producer.published} messages, ${producer.failures} failed publish calls retried, ${producer.resolved} outcomes looked up, ${copies} found handled after they were published again`,
      `members (handler ms per message; connections to replica A/B): ${[...cluster.members.values()]
        .map(
          (m) =>
            `${m.name} ${handlerDelayOf(m.name, config)} ms, ${cluster
              .replicaPorts()
              .map((p) => m.front.forwardedTo.get(p) ?? 0)
              .join('/')}`,
        )
        .join(' · ')}`,
      '',
      formatInvariantReport(report, `chaos run (seed ${config.seed})`),
      '',
      formatInvariantReport(
        idleReport,
        `chaos run (seed ${config.seed}), idle group ${CHAOS_IDLE_GROUP}`,
      ),
      effects === null ? '' : `${CHAOS_GROUP}: ${formatEffectsReport(effects.main)}`,
      effects === null ? '' : `${CHAOS_IDLE_GROUP}: ${formatEffectsReport(effects.idle)}`,
      unreadable > 0 ? `(${unreadable} unreadable record lines)` : '',
      `timings (ms since start): ${JSON.stringify(timings)}`,
    ]
      .filter((l) => l !== '')
      .join('\n');
    log(`\n${summary}\n`);
    const effectsBad =
      effects !== null &&
      [effects.main, effects.idle].some(
        (e) =>
          e.appliedTwice.length > 0 ||
          e.missing.length > 0 ||
          e.unexpected.length > 0 ||
          e.deadLetteredButApplied > 0,
      );
    failed =
      !report.ok ||
      !idleReport.ok ||
      effectsBad ||
      injector.failures().length > 0 ||
      unexpectedExits.length > 0;
    if (failed) log(`diagnostics:\n${cluster.diagnostics()}`);
    if (config.keepFiles || failed) {
      // everything the checker read, next to the record files (for a look at the failure)
      writeFileSync(
        join(cluster.dir.path, 'checker-input.json'),
        JSON.stringify({
          seed: config.seed,
          schedule,
          produced: input.produced,
          crashes: input.crashes,
          redisRollbacks: input.redisRollbacks,
          lostByRedis: input.lostByRedis,
          deliveryLostByRedis: input.deliveryLostByRedis,
          events,
        }),
      );
      writeFileSync(join(cluster.dir.path, 'summary.txt'), summary);
    }
    keptFiles = await cluster.close(config.keepFiles || failed);
    if (keptFiles) log(`run files kept in ${keptFiles}`);
    return {
      config,
      schedule,
      report,
      idleReport,
      summary,
      timeline,
      failedActions: injector
        .failures()
        .map((o) => `${JSON.stringify(o.planned.action)}: ${o.note}`),
      unexpectedExits: unexpectedExits.map(
        (m) =>
          `${m}: ${cluster.members.get(m)?.process?.output().slice(-1500) ?? '(never started)'}`,
      ),
      unreadableLines: unreadable,
      events: events.length,
      timings,
      keptFiles,
      effects,
    };
  } catch (error) {
    log(
      `chaos run (seed ${config.seed}) failed: ${String(error)}\ndiagnostics:\n${cluster.diagnostics()}`,
    );
    throw new ChaosRunError(
      `chaos run with CHAOS_SEED=${config.seed} failed before its check: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    clock.stop();
    await producer?.close();
    if (keptFiles === null) await cluster.close(failed).catch(() => null);
    await db?.drop().catch(() => undefined);
  }
}

/** Members that run at the end of the schedule (started last, not stopped since). */
export function expectedMembers(schedule: FaultSchedule): string[] {
  const alive = new Set(schedule.initialMembers);
  for (const { action } of schedule.actions) {
    if (action.type === 'start-member') alive.add(action.member);
    if (action.type === 'signal-member') alive.delete(action.member);
  }
  return [...alive].sort();
}

/** Waits until `members` exactly are in `groupId`, STABLE, every shard assigned to one of them. */
async function waitForGroup(
  cluster: ChaosCluster,
  groupId: string,
  members: readonly string[],
  timeoutMs: number,
): Promise<DescribedGroup> {
  let group: DescribedGroup | null = null;
  await waitForNoProblems(
    async () => {
      group = await cluster.describe(groupId);
      if (!group) return 'no group yet';
      const ids = group.members.map((m) => m.memberId).sort();
      if (ids.join(',') !== [...members].sort().join(',')) return `members ${ids.join(',')}`;
      if (group.state !== 'STABLE') return `state ${group.state}`;
      const routing = await cluster.routing();
      const assigned = group.members.flatMap((m) => m.assignment.flatMap((a) => a.shards));
      if (assigned.length !== routing.shards.length) {
        return `${assigned.length} of ${routing.shards.length} shards assigned`;
      }
      return null;
    },
    {
      timeoutMs,
      intervalMs: 100,
      message: `group ${groupId} STABLE with ${members.join(', ')}`,
      retryErrors: true,
    },
  );
  return group as unknown as DescribedGroup;
}

/**
 * The end of a run: reshard finished, each group stable with its surviving members, and every
 * current shard read to its end by each group with nothing pending.
 */
async function quiesce(
  cluster: ChaosCluster,
  groups: ReadonlyArray<{ readonly group: string; readonly members: readonly string[] }>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const left = (): number => Math.max(1000, deadline - Date.now());
  await waitForNoProblems(
    async () => {
      const routing = await cluster.routing();
      return routing.resharding === null ? null : JSON.stringify(routing.resharding).slice(0, 300);
    },
    { timeoutMs: left(), intervalMs: 100, message: 'the reshard to finish', retryErrors: true },
  );
  for (const { group, members } of groups) await waitForGroup(cluster, group, members, left());
  const redis = cluster.redisClient();
  await waitForNoProblems(
    async () => {
      const { shards, resharding } = await cluster.routing();
      if (resharding !== null) return 'a reshard started again';
      const problems: string[] = [];
      for (const { id, key } of shards) {
        const info = (await redis.xinfo('STREAM', key).catch(() => null)) as unknown[] | null;
        const last = info ? (info[info.indexOf('last-generated-id') + 1] as string) : '0-0';
        const rows = (await redis.xinfo('GROUPS', key).catch(() => [])) as unknown[][];
        for (const { group } of groups) {
          const g = rows.find((row) => row[row.indexOf('name') + 1] === group);
          const delivered = g ? (g[g.indexOf('last-delivered-id') + 1] as string) : '0-0';
          const pending = g ? Number(g[g.indexOf('pending') + 1]) : 0;
          if ((last !== '0-0' && delivered !== last) || pending > 0) {
            problems.push(`${group} shard ${id}: pending ${pending}, read ${delivered} of ${last}`);
          }
        }
      }
      return problems.length === 0 ? null : problems.join('; ');
    },
    {
      timeoutMs: left(),
      intervalMs: 100,
      message: 'every shard read to its end and acknowledged',
      retryErrors: true,
    },
  );
}

/** Everything the checker needs about `group`, read at the end of the run. */
async function collect(
  cluster: ChaosCluster,
  producer: ChaosProducer,
  crashes: readonly MemberCrash[],
  rollbacks: readonly RecordedRollback[],
  clockSteps: readonly RedisClockStep[],
  group: string,
): Promise<{ input: InvariantInput; events: GroupEventEntry[]; unreadable: number }> {
  const routing = await cluster.routing();
  const records = readRecordFiles(cluster.recordFiles(group));
  const members = new Set(
    [...cluster.members.values()].filter((m) => m.group === group).map((m) => m.name),
  );
  const events = await fetchGroupEvents(cluster.adminFront.url, TEST_TOKENS.admin, group);
  const redis = cluster.redisClient();
  const input: InvariantInput = {
    stream: CHAOS_STREAM,
    produced: producer.produced,
    handled: records.handled,
    acks: records.acks,
    // (the events are on Redis's clock, the records on the machine's)
    ownership: ownershipFromEvents(eventsOnMachineClock(events, clockSteps, group)),
    pending: await readPendingSnapshot(redis, group, routing.shards),
    // one dead-letter stream for every group of the stream: a group's entries name its members
    deadLettered: (await readDeadLetters(redis, routing.deadLetterKey)).filter((d) =>
      members.has(d.memberId),
    ),
    crashes,
    redisRollbacks: rollbacks.map(({ snapshotAt, killedAt }) => ({ snapshotAt, killedAt })),
    lostByRedis: lostByRedis(producer.produced, rollbacks, new KeySpace(cluster.prefix)),
    deliveryLostByRedis: deliveryLostByRedis(
      producer.produced,
      rollbacks,
      new KeySpace(cluster.prefix),
      group,
    ),
  };
  return { input, events, unreadable: records.unreadable };
}

/**
 * The produced messages whose `XADD` Redis lost: published before a rollback's kill, with an id
 * above the last entry id of their shard that survived it. A shard missing after the restart was
 * either created in the lost window (its messages are lost) or deleted by a reshard before the
 * snapshot (drained: nothing lost), so there only messages with an id from the snapshot on
 * count. Ids are Redis' millisecond time, and every id issued after the restart is above the
 * kill time, so nothing published later matches.
 */
export function lostByRedis(
  produced: readonly ProducedMessage[],
  rollbacks: readonly RecordedRollback[],
  keys: KeySpace,
): Array<{ shard: number; id: string }> {
  return writtenBeforeKill(produced, rollbacks, (p, r, ms) => {
    const tail = r.tails.get(keys.shardKey(CHAOS_STREAM, p.shard));
    if (tail === undefined) return ms >= r.snapshotAt - SNAPSHOT_SLACK_MS;
    return compareIds(p.id, tail) > 0;
  });
}

/**
 * The produced messages whose delivery to `group` Redis may have lost: published before a
 * rollback's kill, kept by Redis, above the group's last-delivered-id that survived on their
 * shard (they are read again as new; an ack of the lost delivery acknowledged nothing).
 */
export function deliveryLostByRedis(
  produced: readonly ProducedMessage[],
  rollbacks: readonly RecordedRollback[],
  keys: KeySpace,
  group: string,
): Array<{ shard: number; id: string }> {
  return writtenBeforeKill(produced, rollbacks, (p, r) => {
    const shardKey = keys.shardKey(CHAOS_STREAM, p.shard);
    const tail = r.tails.get(shardKey) ?? '0-0';
    const delivered = r.delivered.get(deliveredKey(group, shardKey)) ?? '0-0';
    return compareIds(p.id, tail) <= 0 && compareIds(p.id, delivered) > 0;
  });
}

/**
 * The produced messages that some rollback matches: written no later than its kill (an id's
 * millisecond part is Redis' time) and accepted by `test`.
 */
function writtenBeforeKill(
  produced: readonly ProducedMessage[],
  rollbacks: readonly RecordedRollback[],
  test: (p: ProducedMessage, r: RecordedRollback, ms: number) => boolean,
): Array<{ shard: number; id: string }> {
  return produced
    .filter((p) => {
      const [ms = 0] = p.id.split('-').map(Number);
      return rollbacks.some((r) => ms <= r.killedAt && test(p, r, ms));
    })
    .map((p) => ({ shard: p.shard, id: p.id }));
}

/** Orders two stream entry ids (`ms-seq`). */
function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am - bm || as - bs;
}
