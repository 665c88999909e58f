import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEffects, formatEffectsReport } from '../../support/effects-check.js';
import { readDeadLetters } from '../../support/invariants/index.js';
import {
  type PrivatePostgres,
  startPrivatePostgres,
} from '../../support/postgres-server-process.js';
import { pollUntil } from '../../support/wait.js';
import { GroupRun } from './group-run.js';

/** One statement on a connection of its own (the server restarts under the test's feet). */
async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const TOTAL = 600;
const STOP_AT = 200;
const START_AT = 320;

// A real PostgreSQL restart under exactly-once handlers: example workers in their exactly-once
// mode write into a private cluster (the shared server on 5432 must not be restarted), which is
// stopped in immediate mode while they consume (every backend gone at once, commits in flight
// included) and started again while the producer keeps publishing. Handlers fail while it is
// down and are retried; nothing is applied twice, nothing is missing, nothing is dead-lettered
// (MAX_DELIVERIES is far above what the outage costs).
describe('e2e: exactly-once handlers through a PostgreSQL restart', () => {
  let run: GroupRun;
  let server: PrivatePostgres;

  beforeAll(async () => {
    server = await startPrivatePostgres();
    run = await GroupRun.start({ label: 'e2e-eo-pg-restart', shards: 4 });
  });
  afterAll(async () => {
    await run?.close();
    await server?.dispose();
  });

  it('applies every entry once across an immediate stop and a start', async () => {
    const env = { EXACTLY_ONCE_DATABASE_URL: server.url, MAX_DELIVERIES: '50' };
    await run.startWorker('r1', env);
    await run.startWorker('r2', env);
    await run.waitForMembers(['r1', 'r2']);

    let stopped = false;
    let restarted = false;
    let appliedBeforeStop = 0;
    await run.producer.produce({
      total: TOTAL,
      keys: 40,
      ratePerSecond: 200,
      holdAt: (published) => {
        if (!stopped && published >= STOP_AT) {
          stopped = true;
          return (async () => {
            // mid-stream: the workers are writing when the server goes
            const [row] = await pollUntil(
              () =>
                query<{ n: number }>(server.url, 'SELECT count(*)::int AS n FROM order_effects'),
              (rows) => (rows[0]?.n ?? 0) >= STOP_AT / 2,
              { timeoutMs: 30_000, message: 'the workers to apply half of what was published' },
            );
            appliedBeforeStop = row!.n;
            await server.stop('immediate');
          })();
        }
        if (!restarted && published >= START_AT) {
          restarted = true;
          return server.start();
        }
        return undefined;
      },
    });
    expect(restarted).toBe(true);
    await run.waitDrained(90_000);

    const routing = await run.streamRouting();
    const dead = await readDeadLetters(run.redis, routing.deadLetterKey);
    const checker = new pg.Pool({ connectionString: server.url, max: 2 });
    checker.on('error', () => undefined);
    try {
      const report = await checkEffects(checker, {
        produced: run.producer.produced,
        deadLettered: dead,
      });
      process.stdout.write(`${formatEffectsReport(report)}\n`);
      expect(report.appliedTwice).toEqual([]);
      expect(report.missing).toEqual([]);
      expect(dead).toEqual([]);
      expect(report.rows).toBe(TOTAL);
      // the outage made handlers fail: entries delivered while the server was down were
      // committed by a later delivery
      const retried = await checker.query<{ n: number; max: number }>(
        'SELECT count(*)::int AS n, max(delivery)::int AS max FROM order_effects WHERE delivery > 1',
      );
      process.stdout.write(
        `applied before the stop ${appliedBeforeStop}; committed on a retry ${retried.rows[0]!.n} (most deliveries ${retried.rows[0]!.max})\n`,
      );
      expect(retried.rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await checker.end();
    }
    // the workers rode the restart out
    expect(run.workers.get('r1')!.process.running).toBe(true);
    expect(run.workers.get('r2')!.process.running).toBe(true);
  }, 240_000);
});
