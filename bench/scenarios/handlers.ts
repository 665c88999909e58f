import { createExactlyOnceTable } from '@redis-stream-coordinator/nestjs/postgres';
import { createTestSchema, type TestSchema } from '../../test/support/postgres-schema.js';
import { waitForValue } from '../../test/support/wait.js';
import { BenchChild } from '../support/bench-child.js';
import { BenchCoordinator, type BenchContext } from '../support/bench-context.js';
import { effectRowMismatch } from '../support/effect-rows.js';
import { selectShapes } from '../support/shape-filter.js';
import { median } from '../support/stats.js';
import { benchPayload } from '../workers/payload.js';

/**
 * One entry of the handlers scenario: how the member's handler is shaped. Adding a case is one
 * entry: `handlerOptions` goes into the `@StreamShardHandler` options as is (e.g. the ordering and
 * concurrency options of `ordering: 'key'`, once the library has them).
 */
export interface HandlerShape {
  /** Label in the report. */
  readonly name: string;
  /** `message`: one message per call; `batch`: `batch: { maxSize: batchMax }`. */
  readonly mode: 'message' | 'batch';
  /**
   * `sleep`: await 10 ms per call (per message, or once per batch); `payload`: read payloads;
   * `pg-insert`: one autocommit INSERT of an effect row per message (a `pg` Pool of 8);
   * `pg-exactly-once`: the same INSERT through `@ExactlyOnce()` + `@PgTransaction()`. Both `pg-*`
   * need PostgreSQL (DATABASE_URL / PG_URL / 127.0.0.1:5432) and are per-message handlers.
   */
  readonly work: 'sleep' | 'payload' | 'pg-insert' | 'pg-exactly-once';
  readonly batchMax?: number;
  readonly handlerOptions?: Readonly<Record<string, unknown>>;
}

/** One drain of one case. */
export interface HandlerShapeRun {
  readonly messages: number;
  readonly ms: number;
  readonly perSecond: number;
  readonly calls: number;
  readonly cpuUsPerMessage: number;
  /** Messages handled before an earlier-published message of their key (must be 0). */
  readonly orderViolations: number;
}

/** One case's runs and medians. */
export interface HandlerShapeCase {
  readonly shape: HandlerShape;
  readonly runs: readonly HandlerShapeRun[];
  readonly perSecond: number;
  readonly cpuUsPerMessage: number;
  /** Why the case failed (no PostgreSQL, wrong effect rows, …); its runs are then not counted. */
  readonly failure?: string;
}

/** The handlers scenario's results. */
export interface HandlersResult {
  readonly shards: number;
  readonly keys: number;
  readonly cases: readonly HandlerShapeCase[];
}

const SHARDS = 8;
const KEYS = 1000;

/**
 * `ordering: 'key'` at a given `maxConcurrency`; the stream's `concurrency` (a cap on all
 * handler calls of the stream on the member) is raised to let 8 shards × maxConcurrency run.
 */
function keyOrdered(maxConcurrency: number): HandlerShape {
  return {
    name: `10 ms per message, ordering 'key', maxConcurrency ${maxConcurrency}`,
    mode: 'message',
    work: 'sleep',
    handlerOptions: {
      ordering: 'key',
      maxConcurrency,
      concurrency: Math.min(1024, SHARDS * maxConcurrency),
    },
  };
}

/** The cases, one entry each (issue 19 part 4: shard vs key ordering, batch vs per message). */
export const HANDLER_SHAPES: readonly HandlerShape[] = [
  { name: "10 ms per message, ordering 'shard'", mode: 'message', work: 'sleep' },
  keyOrdered(8),
  keyOrdered(64),
  keyOrdered(256),
  { name: '10 ms per call, batch handler (100)', mode: 'batch', work: 'sleep', batchMax: 100 },
  { name: 'reads payload, per-message handler', mode: 'message', work: 'payload' },
  { name: 'reads payload, batch handler (100)', mode: 'batch', work: 'payload', batchMax: 100 },
  // issue 20: the cost of exactly-once end to end, against a plain handler doing the same insert
  { name: 'INSERT per message, plain (pg Pool of 8)', mode: 'message', work: 'pg-insert' },
  {
    name: 'INSERT per message, @ExactlyOnce() (pool of 8)',
    mode: 'message',
    work: 'pg-exactly-once',
  },
];

const EFFECTS_DDL =
  'CREATE TABLE effects (n bigserial PRIMARY KEY, shard int NOT NULL, entry_id text NOT NULL, payload text NOT NULL)';

/**
 * A schema of its own for a `pg-*` case: the effect table and the offsets table (the library's
 * helper). PostgreSQL from DATABASE_URL / PG_URL / 127.0.0.1:5432 (no container).
 */
async function effectSchema(label: string): Promise<TestSchema> {
  let db: TestSchema;
  try {
    db = await createTestSchema(`bench_${label}`, { docker: false });
  } catch (error) {
    throw new Error(
      `this case needs PostgreSQL (set DATABASE_URL, or run one on 127.0.0.1:5432): ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  try {
    await db.pool.query(EFFECTS_DDL);
    await createExactlyOnceTable(db.pool);
    return db;
  } catch (error) {
    await db.drop();
    throw error;
  }
}

/** Waits until every message's effect row is committed, checks exactly one each, empties it. */
async function checkEffects(db: TestSchema, messages: number, label: string): Promise<void> {
  const count = async (): Promise<{ rows: number; distinct: number }> => {
    const { rows } = await db.pool.query<{ rows: string; distinct: string }>(
      'SELECT count(*) AS rows, count(DISTINCT (shard, entry_id)) AS distinct FROM effects',
    );
    return { rows: Number(rows[0]?.rows), distinct: Number(rows[0]?.distinct) };
  };
  // the exactly-once handler counts a message before the library commits its transaction
  let last = await count();
  await waitForValue(
    async () => {
      last = await count();
      return last.rows >= messages ? true : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 20, message: `${label}: ${messages} effect rows` },
  ).catch(() => undefined);
  const mismatch = effectRowMismatch(last, messages);
  if (mismatch !== undefined) throw new Error(`${label}: ${mismatch}`);
  await db.pool.query('TRUNCATE effects');
}

/**
 * Handlers: one member process holding 8 shards drains a prefill spread over 1,000 keys, per
 * handler shape (see {@link HANDLER_SHAPES}); messages/s from `go` to the last handler call (both
 * timed by the member, on its monotonic clock), and
 * the member's CPU time per message. A 10 ms per-message handler on shard ordering is bounded by
 * 8 shards × 100 calls/s, so its prefill is smaller. BENCH_SHAPES (comma-separated parts of
 * shape names) runs a subset. A case that fails (a `pg-*` case without PostgreSQL, an effect
 * table without exactly one row per message) is reported with its reason; the others still run.
 */
export async function runHandlersBench(
  ctx: BenchContext,
  shapes: readonly HandlerShape[] = selectShapes(HANDLER_SHAPES, process.env.BENCH_SHAPES),
): Promise<HandlersResult> {
  const full = ctx.profile.name === 'full';
  const reps = full ? 3 : 1;
  const cases: HandlerShapeCase[] = [];
  const coordinator = await BenchCoordinator.start(ctx, 'shape');
  try {
    for (const [index, shape] of shapes.entries()) {
      const slow =
        shape.work === 'sleep' && shape.mode === 'message' && shape.handlerOptions === undefined;
      const messages = slow ? (full ? 8000 : 2000) : full ? 100_000 : 20_000;
      const runs: HandlerShapeRun[] = [];
      let db: TestSchema | undefined;
      try {
        if (shape.work === 'pg-insert' || shape.work === 'pg-exactly-once')
          db = await effectSchema(`shape_${index}`);
        const stream = `shape-${index}`;
        const info = await coordinator.createStream(stream, SHARDS);
        const member = await BenchChild.start({
          worker: 'handler-shape-member',
          name: `shape-${index}`,
          env: {
            COORDINATOR_URL: coordinator.url,
            COORDINATOR_TOKEN: coordinator.token,
            REDIS_URL: ctx.redisUrl,
            GROUP: `shape-${index}`,
            BENCH_STREAM: stream,
            HANDLER_MODE: shape.mode,
            WORK: shape.work,
            BATCH_MAX: String(shape.batchMax ?? 100),
            HANDLER_OPTIONS: JSON.stringify(shape.handlerOptions ?? {}),
            ...(db ? { BENCH_PG_URL: db.url } : {}),
            ...ctx.profileEnv(`handlers-${index}`),
          },
        });
        try {
          await waitForValue(
            async () => {
              const s = await member.request({ type: 'status' }, 'status');
              return (s.held as number[]).length === SHARDS ? true : undefined;
            },
            {
              timeoutMs: 60_000,
              intervalMs: 100,
              message: `${stream}: the member to hold 8 shards`,
            },
          );
          for (let rep = 0; rep < reps; rep++) {
            await member.request({ type: 'arm' }, 'armed');
            const publisher = coordinator.publisher();
            for (let i = 0; i < messages; i += 5000) {
              const batch = [];
              for (let j = i; j < Math.min(messages, i + 5000); j++)
                batch.push({ key: `k-${j % KEYS}`, payload: benchPayload(j) });
              await publisher.publishBatch(stream, batch);
            }
            await waitForValue(
              async () => {
                const s = await member.request({ type: 'status' }, 'status');
                return (s.waiting as number) >= SHARDS ? true : undefined;
              },
              { timeoutMs: 30_000, intervalMs: 20, message: `${stream}: every shard at the gate` },
            );
            const before = await member.request({ type: 'status' }, 'status');
            member.send({ type: 'go' });
            const after = await waitForValue(
              async () => {
                const s = await member.request({ type: 'status' }, 'status');
                return (s.handled as number) >= messages ? s : undefined;
              },
              { timeoutMs: 600_000, intervalMs: 10, message: `${stream}: ${messages} handled` },
            );
            const ms = after.elapsedMs as number;
            const run: HandlerShapeRun = {
              messages,
              ms,
              perSecond: (messages / ms) * 1000,
              calls: after.calls as number,
              orderViolations: after.orderViolations as number,
              cpuUsPerMessage: ((after.cpuUs as number) - (before.cpuUs as number)) / messages,
            };
            runs.push(run);
            ctx.log(
              `handlers: ${shape.name}: ${Math.round(run.perSecond)} msg/s, ${run.cpuUsPerMessage.toFixed(1)} µs CPU/msg, ${run.calls} calls, ${run.orderViolations} per-key order violations`,
            );
            if (db) await checkEffects(db, messages, `${stream} run ${rep + 1}`);
            for (const key of info.keys) await ctx.redis.xtrim(key, 'MAXLEN', 0);
          }
        } finally {
          await member.stop();
        }
      } catch (error) {
        const failure = error instanceof Error ? error.message : String(error);
        ctx.log(`handlers: ${shape.name}: FAILED: ${failure}`);
        cases.push({ shape, runs, perSecond: Number.NaN, cpuUsPerMessage: Number.NaN, failure });
        continue;
      } finally {
        await db?.drop();
      }
      cases.push({
        shape,
        runs,
        perSecond: median(runs.map((r) => r.perSecond)),
        cpuUsPerMessage: median(runs.map((r) => r.cpuUsPerMessage)),
      });
    }
  } finally {
    await coordinator.stop();
  }
  return { shards: SHARDS, keys: KEYS, cases };
}
