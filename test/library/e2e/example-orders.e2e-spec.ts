import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
} from '@redis-stream-coordinator/nestjs/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { readDeadLetters } from '../../support/invariants/index.js';
import { freePort } from '../../support/free-port.js';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';
import { connectRedis } from '../../support/redis-client.js';
import { redisUrl } from '../../support/redis.js';
import { repoRoot, ServiceProcess } from '../../support/service-process.js';
import { pollUntil } from '../../support/wait.js';
import { GroupRun } from './group-run.js';

const APP = resolve(repoRoot(), 'apps/example-orders/dist');
const TOTAL = 400;
const CUSTOMERS = 20;
const KILL_AT = 150;

/** Order rows in all, distinct order ids, and the order ids written more than once. */
async function readOrders(
  db: TestSchema,
): Promise<{ rows: number; distinct: number; twice: string[] }> {
  const totals = await db.pool.query<{ rows: number; distinct: number }>(
    'SELECT count(*)::int AS rows, count(DISTINCT order_id)::int AS distinct FROM orders',
  );
  const twice = await db.pool.query<{ order_id: string }>(
    'SELECT order_id FROM orders GROUP BY order_id HAVING count(*) > 1 ORDER BY order_id',
  );
  return { ...totals.rows[0]!, twice: twice.rows.map((r) => r.order_id) };
}

// The orders example (apps/example-orders) built and run as a child process against real Redis
// and PostgreSQL: its migration, then orders published by customer key, the app SIGKILLed
// mid-stream and started again; every order is written exactly once, and a payload that is not
// an order is dead-lettered with nothing written.
describe('e2e: the orders example writes every order into PostgreSQL exactly once', () => {
  let run: GroupRun;
  let db: TestSchema;
  let app: ServiceProcess | undefined;
  let publisherRedis: ReturnType<typeof connectRedis> | undefined;

  beforeAll(async () => {
    db = await createTestSchema('example_orders');
    run = await GroupRun.start({ label: 'e2e-example-orders', shards: 4 });
  });
  afterAll(async () => {
    await app?.stop();
    publisherRedis?.disconnect();
    await run?.close();
    await db?.drop();
  });

  it('migrates, writes each order once, and again after a SIGKILL and a restart', async () => {
    const migrate = (): Promise<unknown> =>
      promisify(execFile)(process.execPath, [resolve(APP, 'migrate.js')], {
        env: { ...process.env, DATABASE_URL: db.url },
        timeout: 60_000,
      });
    await migrate();
    await migrate(); // idempotent

    const port = await freePort();
    app = await ServiceProcess.launch({
      entry: resolve(APP, 'main.js'),
      env: {
        ...process.env,
        PORT: String(port),
        COORDINATOR_URL: run.coordinator.url,
        COORDINATOR_TOKEN: TEST_TOKENS.member,
        REDIS_URL: redisUrl(),
        GROUP: run.group,
        DATABASE_URL: db.url,
      },
      port,
      readyPath: '/health/ready',
      readyTimeoutMs: 60_000,
      name: 'example-orders',
    });

    publisherRedis = connectRedis(redisUrl());
    const publisher = new StreamPublisher({
      connection: publisherRedis,
      routing: new RoutingCache(
        new CoordinatorClient({
          baseUrl: run.coordinator.url,
          token: TEST_TOKENS.member,
          requestTimeoutMs: 5000,
        }),
      ),
    });
    const publish = async (from: number, to: number): Promise<void> => {
      for (let n = from; n < to; n += 10) {
        const batch = [];
        for (let i = n; i < Math.min(to, n + 10); i++) {
          batch.push({ key: `c${i % CUSTOMERS}`, payload: { orderId: `o-${i}`, amountCents: i } });
        }
        await publisher.publishBatch('orders', batch);
      }
    };

    await publish(0, KILL_AT);
    // mid-stream: some orders written, the rest in the app's hands or still in the stream
    await pollUntil(
      () => readOrders(db),
      (orders) => orders.rows >= 50,
      { timeoutMs: 30_000, message: 'the app to write its first orders' },
    );
    await app.kill();
    const atKill = await readOrders(db);
    await publish(KILL_AT, TOTAL);
    await app.restart();

    const written = await pollUntil(
      () => readOrders(db),
      (orders) => orders.distinct === TOTAL,
      { timeoutMs: 90_000, message: `all ${TOTAL} orders to be written` },
    );
    // a payload that is not an order: dead-lettered at its first delivery, nothing written
    const [badId] = await publisher.publishBatch('orders', [
      { key: 'c1', payload: { orderId: '', amountCents: 1 } },
    ]);
    // every entry acknowledged, so nothing left that could write an order again
    await run.waitDrained(60_000);
    const dead = await readDeadLetters(run.redis, (await run.streamRouting()).deadLetterKey);
    expect(dead.map((d) => ({ id: d.id, deliveryCount: d.deliveryCount }))).toEqual([
      { id: badId, deliveryCount: 1 },
    ]);
    expect(dead[0]!.error).toMatch(/is not an order: expected \{orderId: string/);
    const final = await readOrders(db);
    process.stdout.write(
      `orders written before the SIGKILL ${atKill.rows}; in all ${final.rows} rows, ${final.distinct} orders, written twice ${final.twice.length}\n`,
    );
    expect(written.twice).toEqual([]);
    expect(final).toEqual({ rows: TOTAL, distinct: TOTAL, twice: [] });
    const offsets = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM rsc_applied_offsets',
    );
    expect(offsets.rows[0]!.n).toBe(4);
    const sample = await db.pool.query<{ customer_id: string; amount_cents: number }>(
      "SELECT customer_id, amount_cents FROM orders WHERE order_id = 'o-123'",
    );
    expect(sample.rows).toEqual([{ customer_id: `c${123 % CUSTOMERS}`, amount_cents: 123 }]);
  }, 240_000);
});
