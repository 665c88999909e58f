import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type DescribedGroup,
  type GroupEventEntry,
  KeySpace,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../test/support/coordinator-process.js';
import { resolveRedis } from '../../test/support/redis-resolve.js';
import { WorkerProcess } from '../../test/support/worker-process.js';
import { renderFrame, type ShardRow, type WorkerRow } from './dashboard.js';
import { DemoProducer } from './demo-producer.js';
import { checkRecords } from './record-check.js';
import { connectRedis } from '../../test/support/redis-client.js';

/**
 * `npm run demo`: Redis (found or started), the coordinator, three workers and a producer; a live
 * table of members, owned shards, handled counts and lag; a fourth worker joins and one leaves,
 * showing incremental rebalancing; then everything drains, is checked and stopped.
 * `DEMO_SPEED=4` runs the same script four times faster.
 */
const SPEED = Math.max(0.1, Number(process.env.DEMO_SPEED ?? '1'));
const GROUP = 'demo';
const STREAM = 'orders';
const SHARDS = 8;
const at = (seconds: number): number => (seconds * 1000) / SPEED;

interface DemoWorker {
  name: string;
  process: WorkerProcess | null;
  state: WorkerRow['state'];
  record: string;
  handled: number;
  memberId: string | null;
}

const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | null = null;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch {
        // best effort
      }
    }
  })();
  return cleaning;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  process.once('SIGINT', () => {
    process.stdout.write('\ninterrupted: stopping everything...\n');
    void cleanup().then(() => process.exit(130));
  });
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  const redis = await resolveRedis({ log });
  cleanups.push(() => redis.stop());
  log(`Redis: ${redis.url} (${redis.source})`);

  const prefix = `demo-${Date.now().toString(36)}`;
  const dir = mkdtempSync(join(tmpdir(), 'rsc-demo-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const coordinator = await CoordinatorProcess.start({
    prefix,
    redisUrl: redis.url,
    env: {
      STREAMS: `${STREAM}:${SHARDS}`,
      HEARTBEAT_INTERVAL_MS: '3000',
      SESSION_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'error',
    },
  });
  cleanups.push(async () => void (await coordinator.stop()));
  log(`coordinator: ${coordinator.url}`);
  const api = new CoordinatorApi(coordinator.url, TEST_TOKENS.admin);
  const data = connectRedis(redis.url);
  cleanups.push(async () => {
    let cursor = '0';
    do {
      const [next, keys] = await data.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await data.unlink(...keys);
    } while (cursor !== '0');
    data.disconnect();
  });

  const workers: DemoWorker[] = [];
  const startWorker = async (): Promise<void> => {
    const name = `worker-${workers.length + 1}`;
    const w: DemoWorker = {
      name,
      process: null,
      state: 'running',
      record: join(dir, `${name}.jsonl`),
      handled: 0,
      memberId: null,
    };
    workers.push(w);
    w.process = await WorkerProcess.start({
      coordinatorUrl: coordinator.url,
      group: GROUP,
      redisUrl: redis.url,
      recordFile: w.record,
      env: { HANDLER_DELAY_MS: '1', LOG_LEVEL: 'warn' },
    });
    cleanups.push(async () => void (await w.process?.stop()));
  };
  for (let i = 0; i < 3; i++) await startWorker();

  const producer = new DemoProducer(data, coordinator.url, TEST_TOKENS.member, STREAM, 200, 400);
  producer.start();
  cleanups.push(() => producer.stop());

  const started = Date.now();
  const events: string[] = [];
  let lastEvent: string | undefined;
  let phase = 'three workers share 8 shards';
  let stopFrames = false;
  const frames = (async () => {
    while (!stopFrames) {
      await drawFrame();
      await sleep(Math.max(100, 500 / SPEED));
    }
  })();

  async function drawFrame(): Promise<void> {
    const group = await api.get<DescribedGroup>(`/v1/groups/${GROUP}`).catch(() => null);
    const described = group?.status === 200 ? group.body : null;
    const page = await api
      .get<{ events: GroupEventEntry[] }>(
        `/v1/groups/${GROUP}/events?limit=200${lastEvent ? `&after=${lastEvent}` : ''}`,
      )
      .catch(() => null);
    for (const e of page?.status === 200 ? page.body.events : []) {
      lastEvent = e.id;
      if (
        [
          'MEMBER_JOINED',
          'MEMBER_LEFT',
          'SHARDS_REVOKED',
          'SHARDS_ASSIGNED',
          'MEMBER_EXPIRED',
        ].includes(e.type)
      ) {
        const who =
          workers.find((w) => w.memberId === e.data.memberId)?.name ??
          (typeof e.data.memberId === 'string' ? e.data.memberId : '');
        const shards = (e.data.shards as Array<{ shards: number[] }> | undefined)
          ?.flatMap((s) => s.shards)
          .join(',');
        events.push(
          `${e.at.slice(11, 23)} epoch ${e.groupEpoch} ${e.type} ${who}${shards ? ` [${shards}]` : ''}`,
        );
      }
    }
    for (const w of workers) {
      if (w.state === 'running' && w.process) {
        const s = await w.process.status().catch(() => null);
        if (s) {
          w.handled = s.handled;
          w.memberId = s.memberId;
        }
      }
    }
    const shards: ShardRow[] = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      const info = (await data
        .xinfo('GROUPS', new KeySpace(prefix).shardKey(STREAM, shard))
        .catch(() => [])) as unknown[][];
      const row = info.map(toRecord).find((r) => r.name === GROUP);
      const owner = described?.members.find((m) =>
        m.assignment.some((a) => a.shards.includes(shard)),
      )?.memberId;
      shards.push({
        shard,
        lag: row && row.lag !== null ? Number(row.lag) : null,
        pending: row ? Number(row.pending) : 0,
        owner: workers.find((w) => w.memberId === owner)?.name ?? null,
      });
    }
    const text = renderFrame({
      elapsedS: (Date.now() - started) / 1000,
      phase,
      group: described,
      workers: workers.map((w) => ({
        name: w.name,
        state: w.state,
        handled: w.handled,
        memberId: w.memberId,
      })),
      shards,
      published: producer.published,
      events,
    });
    process.stdout.write(process.stdout.isTTY ? `\x1b[2J\x1b[H${text}\n` : `${text}\n\n`);
    return;
  }

  await sleep(at(10));
  phase = 'worker-4 joins: only the shards it needs move';
  await startWorker();
  await sleep(at(8));
  phase = 'worker-2 gets SIGTERM: it drains, leaves, its shards move at once';
  const leaving = workers[1] as DemoWorker;
  leaving.state = 'stopping';
  await leaving.process?.stop();
  leaving.state = 'stopped';
  await sleep(at(8));
  phase = 'producer stopped: draining';
  await producer.stop();
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    let backlog = 0;
    for (let shard = 0; shard < SHARDS; shard++) {
      const info = (await data
        .xinfo('GROUPS', new KeySpace(prefix).shardKey(STREAM, shard))
        .catch(() => [])) as unknown[][];
      const row = info.map(toRecord).find((r) => r.name === GROUP);
      backlog += row ? Number(row.pending) + Number(row.lag ?? 1) : 0;
    }
    if (backlog === 0) break;
    await sleep(100);
  }
  stopFrames = true;
  await frames;
  await drawFrame();
  const summary = checkRecords(
    workers.map((w) => w.record),
    producer.sent(),
  );
  log('');
  log(`published ${producer.published} messages (${producer.errors} publish errors)`);
  log(
    `handled ${summary.distinct} distinct messages, ${summary.duplicates} redeliveries, ${summary.missing} missing`,
  );
  log(
    `per-key order: ${summary.orderViolations === 0 ? 'OK' : `${summary.orderViolations} keys out of order`}`,
  );
  const ok = summary.missing === 0 && summary.orderViolations === 0 && producer.errors === 0;
  await cleanup();
  log(
    ok
      ? 'demo finished: nothing lost, every key in order; everything stopped.'
      : 'demo finished with problems (see above).',
  );
  process.exitCode = ok ? 0 : 1;
}

function toRecord(flat: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = flat[i + 1];
  return out;
}

main().catch(async (error: unknown) => {
  process.stderr.write(
    `demo failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  await cleanup();
  process.exit(1);
});
