import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  NonRetryableError,
  type StreamShardMessage,
} from '../../../libs/stream-coordinator/src/index.js';
import {
  createExactlyOnceTable,
  DEFAULT_OFFSETS_TABLE,
  PostgresExactlyOnce,
} from '@redis-stream-coordinator/nestjs/postgres';
import { PostgresAppliedEntryCheck } from '../../../libs/stream-coordinator/src/postgres/postgres-applied-entry-check.js';
import type { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { CapturingLogger } from '../../support/capturing-logger.js';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/restartable-redis.js';
import { createTestRedis, uniquePrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import {
  deferred,
  fill,
  grant,
  pending,
  seqOf,
  type TestReaderOptions,
  type TestShard,
  testShard,
  useReaders,
} from '../data-plane/data-plane-fixtures.js';

// A Redis that loses the acks it answered last (docs/protocol.md §12.5: a restart from an older
// AOF, a failover to a lagging replica) while a shard reader runs an exactly-once handler on a
// real PostgreSQL: the handler wraps its effect in PostgresExactlyOnce.apply and the reader's
// dead-letter decision asks the offsets table (`alreadyApplied`), wired as the member runtime
// wires them for an @ExactlyOnce() handler (runtime/shard-reader-pool.ts).
//
// The plain-handler spec (data-plane/shard-reader-lost-acks.e2e-spec.ts) shows the entries whose
// acks Redis lost handled again after later entries of their key. Here PostgreSQL keeps every
// commit, so the offsets row is ahead of the restored Redis (docs/exactly-once.md, "When Redis
// loses writes"): those redeliveries are at or before the recorded id, skipped without running
// the effect and acknowledged. So every entry's effect is committed once, the effects of a key
// never go back in order, and nothing stays pending.
//
// Only `ordering: 'shard'` with a one-at-a-time handler: exactly-once needs a shard's entries
// settled in id order, so `ordering: 'key'` and batch handlers are refused with @ExactlyOnce()
// at bootstrap (docs/exactly-once.md, "What exactly-once covers"); they have no exactly-once
// mode to test here.
describe('ShardReader with an exactly-once handler on PostgreSQL: acks Redis lost', () => {
  let server: RestartableRedis;
  let redis: Redis;
  let db: TestSchema;
  let exactlyOnce: PostgresExactlyOnce;
  let appliedCheck: PostgresAppliedEntryCheck;
  const newReader = useReaders();
  const prefix = uniquePrefix('eo-lost-acks');

  beforeAll(async () => {
    server = await startRestartableRedis();
    redis = createTestRedis({ url: server.url, maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // refused while the server restarts; commands wait
    db = await createTestSchema('eo_lost_acks');
    await createExactlyOnceTable(db.pool);
    // one row per committed effect, in commit order (`n`)
    await db.pool.query(
      'CREATE TABLE effects (n bigserial PRIMARY KEY, consumer_group text NOT NULL, seq integer NOT NULL, entry_id text NOT NULL, applied_by text NOT NULL)',
    );
    exactlyOnce = new PostgresExactlyOnce({ pool: db.pool });
    appliedCheck = new PostgresAppliedEntryCheck(db.pool, DEFAULT_OFFSETS_TABLE);
  });
  // Gates that paused handler calls wait on: opened after each test whatever happened, before
  // the readers stop (after-each hooks run in reverse order, useReaders' last), so a failed
  // assertion cannot leave a handler call, and with it the reader's stop, waiting for ever.
  const gates: Array<{ resolve: () => void }> = [];
  const gate = (): { promise: Promise<void>; resolve: () => void } => {
    const opened = deferred<void>();
    gates.push(opened);
    return opened;
  };
  /** A point handler calls reach (`reach()`), awaited with a bounded {@link waitFor}. */
  const point = (what: string) => {
    let reached = false;
    return {
      reach: (): void => {
        reached = true;
      },
      wait: (): Promise<number> =>
        waitFor(() => reached, { timeoutMs: 10_000, intervalMs: 5, message: what }),
    };
  };
  afterEach(async () => {
    for (const opened of gates.splice(0)) opened.resolve();
    await redis.flushall();
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.dispose();
    await db?.drop();
  });

  /** What one member's exactly-once handler did, by `seq`. */
  interface Trace {
    /** Every handler call. */
    readonly calls: number[];
    /** Every run of the effect inside the transaction (apply found the entry not applied). */
    readonly ran: number[];
    /** Every call apply skipped as already applied: acknowledged without running the effect. */
    readonly skipped: number[];
  }
  const newTrace = (): Trace => ({ calls: [], ran: [], skipped: [] });

  /**
   * The reader options of an exactly-once handler of `group` on member `memberId`: the handler
   * applies the entry's effect (one `effects` row) through `PostgresExactlyOnce.apply`, and the
   * dead-letter decision settles in the offsets table. `pause` runs first in every handler call
   * (before the transaction), with the number of calls so far; the entry `poison` fails for good
   * (NonRetryableError, inside the transaction, so nothing of it commits).
   */
  function exactlyOnceHandler(
    group: string,
    memberId: string,
    trace: Trace,
    options: { pause?: (seq: number, call: number) => Promise<void>; poison?: number } = {},
  ): Pick<TestReaderOptions, 'handle' | 'alreadyApplied'> {
    const entryOf = (message: StreamShardMessage) => ({
      group,
      stream: message.stream,
      shard: message.shard,
      id: message.id,
      memberId,
    });
    return {
      handle: async (message) => {
        const seq = seqOf(message.payload);
        trace.calls.push(seq);
        await options.pause?.(seq, trace.calls.length);
        const outcome = await exactlyOnce.apply(entryOf(message), async (tx) => {
          trace.ran.push(seq);
          if (seq === options.poison) throw new NonRetryableError(`seq ${seq} is refused`);
          await tx.query(
            'INSERT INTO effects (consumer_group, seq, entry_id, applied_by) VALUES ($1, $2, $3, $4)',
            [group, seq, message.id, memberId],
          );
        });
        if (!outcome.applied) trace.skipped.push(seq);
      },
      alreadyApplied: (message, signal) => appliedCheck.settle(entryOf(message), signal),
    };
  }

  /** Reader options every case shares: one batch of 10, each handled entry acked at once. */
  const readerOptions = {
    ordering: 'shard',
    batchSize: 10,
    maxAckDelayMs: 0,
    retry: { initialDelayMs: 5, maxDelayMs: 50 },
    reconnectBackoff: { initialDelayMs: 20, maxDelayMs: 100 },
  } as const;

  /** The committed effects of `group`, in commit order. */
  async function effects(
    group: string,
  ): Promise<Array<{ seq: number; entryId: string; appliedBy: string }>> {
    const { rows } = await db.pool.query<{ seq: number; entry_id: string; applied_by: string }>(
      'SELECT seq, entry_id, applied_by FROM effects WHERE consumer_group = $1 ORDER BY n',
      [group],
    );
    return rows.map((row) => ({ seq: row.seq, entryId: row.entry_id, appliedBy: row.applied_by }));
  }

  /** The offsets row of `group` (one shard): the last settled id and the last dead letter. */
  async function offsetRows(
    group: string,
  ): Promise<Array<{ last: string; dead_lettered_id: string | null }>> {
    const { rows } = await db.pool.query<{ last: string; dead_lettered_id: string | null }>(
      `SELECT last_ms::text || '-' || last_seq::text AS last, dead_lettered_id FROM ${DEFAULT_OFFSETS_TABLE} WHERE consumer_group = $1`,
      [group],
    );
    return rows;
  }

  /** The original entry ids of the dead letters of `shard`'s stream, oldest first. */
  async function deadLetterIds(client: Redis, shard: TestShard): Promise<string[]> {
    return (await client.xrange(shard.dlq, '-', '+')).map(([, fields]) => {
      const at = fields.findIndex((field, i) => i % 2 === 0 && field === 'id');
      return at < 0 ? '' : (fields[at + 1] ?? '');
    });
  }

  /** `[seq, how many times]`, by seq. */
  function counts(seqs: readonly number[]): Array<[number, number]> {
    const bySeq = new Map<number, number>();
    for (const seq of seqs) bySeq.set(seq, (bySeq.get(seq) ?? 0) + 1);
    return [...bySeq.entries()].sort((a, b) => a[0] - b[0]);
  }

  /**
   * Crashes Redis back to `snapshot`, returning what the restored data holds for `shard` (read
   * before any client can reach it): the pending entries of `group` and the dead letters.
   */
  function crashTo(
    snapshot: string,
    shard: TestShard,
    group: string,
  ): Promise<{ pending: number; deadLetters: string[] }> {
    return server.crashToSnapshot(snapshot, async (url) => {
      const probe = createTestRedis({ url });
      try {
        return {
          pending: (await pending(probe, shard.key, group)).length,
          deadLetters: await deadLetterIds(probe, shard),
        };
      } finally {
        probe.disconnect();
      }
    });
  }

  it('applies each of 0..9 once and in order; the redeliveries of 0..4 are skipped and acked', async () => {
    const group = 'g-once';
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis, shard, group, 'm');
    const ids = await fill(redis, shard.key, 10, 0, 1); // one key: seq 0..9 in order
    const firstEntered = point('entry 0 handed to the handler');
    const snapshotTaken = gate();
    const fifthEntered = point('entry 5 handed to the handler');
    const restored = gate();
    const trace = newTrace();
    const logger = new CapturingLogger();
    newReader({
      shard,
      url: server.url,
      group,
      memberId: 'm',
      logger,
      ...readerOptions,
      ...exactlyOnceHandler(group, 'm', trace, {
        pause: async (seq, call) => {
          if (seq === 0 && call === 1) {
            firstEntered.reach();
            await snapshotTaken.promise;
          }
          if (seq === 5 && call === 6) {
            fifthEntered.reach();
            await restored.promise;
          }
        },
      }),
    }).start();
    // every entry is delivered (and that delivery is in the copy), none acked nor applied yet
    await firstEntered.wait();
    const snapshot = server.snapshot();
    snapshotTaken.resolve();
    // entries 0..4 applied (committed in PostgreSQL) and acked; Redis answered those acks
    await fifthEntered.wait();
    await waitFor(async () => (await pending(redis, shard.key, group)).length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entries 0..4 acked',
    });
    expect((await effects(group)).map((effect) => effect.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(await offsetRows(group)).toEqual([{ last: ids[4], dead_lettered_id: null }]);
    // Redis crashes and comes back without those acks: 0..9 pending again; PostgreSQL keeps 0..4
    const lost = await crashTo(snapshot, shard, group);
    expect(lost).toEqual({ pending: 10, deadLetters: [] });
    restored.resolve();
    // 5..9 are applied and acked on the restored Redis; 0..4 come back: nothing pending
    await waitFor(
      async () => trace.calls.length >= 15 && (await pending(redis, shard.key, group)).length === 0,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: () =>
          `0..4 delivered again and nothing pending (calls ${JSON.stringify(trace.calls)}; last log lines: ${logger.lines.slice(-3).join(' | ')})`,
      },
    );
    // each entry's effect committed exactly once, in entry order: the key's effects never go back
    const committed = await effects(group);
    expect(committed.map((effect) => effect.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(committed.map((effect) => effect.entryId)).toEqual(ids);
    // the effect ran once per entry; 0..4 were delivered again (after 5..9, as with a plain
    // handler), found applied by apply() and acknowledged without running it
    expect(trace.ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(counts(trace.calls)).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 2],
      [5, 1],
      [6, 1],
      [7, 1],
      [8, 1],
      [9, 1],
    ]);
    expect(trace.skipped).toEqual([0, 1, 2, 3, 4]);
    expect(await offsetRows(group)).toEqual([{ last: ids[9], dead_lettered_id: null }]);
    expect(await pending(redis, shard.key, group)).toEqual([]);
    expect(await deadLetterIds(redis, shard)).toEqual([]);
  });

  it('a dead letter Redis lost, later entries applied since: dead-lettered again, no effect, nothing pending', async () => {
    const group = 'g-dead-letter';
    const shard = testShard(prefix, 'orders', 1);
    await grant(redis, shard, group, 'm');
    const ids = await fill(redis, shard.key, 10, 0, 1);
    const firstEntered = point('entry 0 handed to the handler');
    const snapshotTaken = gate();
    const fifthEntered = point('entry 5 handed to the handler');
    const restored = gate();
    const trace = newTrace();
    const logger = new CapturingLogger();
    newReader({
      shard,
      url: server.url,
      group,
      memberId: 'm',
      logger,
      ...readerOptions,
      ...exactlyOnceHandler(group, 'm', trace, {
        poison: 2,
        pause: async (seq, call) => {
          if (seq === 0 && call === 1) {
            firstEntered.reach();
            await snapshotTaken.promise;
          }
          if (seq === 5 && call === 6) {
            fifthEntered.reach();
            await restored.promise;
          }
        },
      }),
    }).start();
    await firstEntered.wait();
    const snapshot = server.snapshot();
    snapshotTaken.resolve();
    // 0, 1, 3, 4 applied; 2 refused, recorded in the offsets row as dead-lettered, then written to
    // the dead-letter stream; all five acked
    await fifthEntered.wait();
    await waitFor(async () => (await pending(redis, shard.key, group)).length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entries 0..4 acked',
    });
    expect(await deadLetterIds(redis, shard)).toEqual([ids[2]]);
    expect((await effects(group)).map((effect) => effect.seq)).toEqual([0, 1, 3, 4]);
    expect(await offsetRows(group)).toEqual([{ last: ids[4], dead_lettered_id: ids[2] }]);
    // Redis loses the acks of 0..4 and the dead letter of 2
    const lost = await crashTo(snapshot, shard, group);
    expect(lost).toEqual({ pending: 10, deadLetters: [] });
    restored.resolve();
    await waitFor(
      async () => trace.calls.length >= 15 && (await pending(redis, shard.key, group)).length === 0,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: () =>
          `0..4 delivered again and nothing pending (calls ${JSON.stringify(trace.calls)}; last log lines: ${logger.lines.slice(-3).join(' | ')})`,
      },
    );
    // every entry but the refused one applied once, in order; the refused one never
    const committed = await effects(group);
    expect(committed.map((effect) => effect.seq)).toEqual([0, 1, 3, 4, 5, 6, 7, 8, 9]);
    expect(committed.map((effect) => effect.entryId)).toEqual(ids.filter((_, i) => i !== 2));
    // the effect ran once per entry (2's run rolled back); every redelivery of 0..4 was skipped
    expect(trace.ran).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(counts(trace.calls)).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 2],
      [5, 1],
      [6, 1],
      [7, 1],
      [8, 1],
      [9, 1],
    ]);
    expect(trace.skipped).toEqual([0, 1, 3, 4]);
    // 2's redelivery came after 5..9 moved the row past it, but 2 is among the shard's latest
    // dead letters (recent_dead_letters): it is refused before its effect runs and dead-lettered
    // again, so the dead letter Redis lost is written back (docs/exactly-once.md, "When Redis
    // loses writes"), as a plain handler writes it again
    expect(await deadLetterIds(redis, shard)).toEqual([ids[2]]);
    expect(await offsetRows(group)).toEqual([{ last: ids[9], dead_lettered_id: ids[2] }]);
    expect(await pending(redis, shard.key, group)).toEqual([]);
  });

  it('a dead letter Redis lost that is the last entry settled: dead-lettered again, never applied', async () => {
    const group = 'g-last-dead-letter';
    const shard = testShard(prefix, 'orders', 2);
    await grant(redis, shard, group, 'm');
    const ids = await fill(redis, shard.key, 5, 0, 1); // seq 0..4, the last one refused
    const firstEntered = point('entry 0 handed to the handler');
    const snapshotTaken = gate();
    const trace = newTrace();
    const logger = new CapturingLogger();
    newReader({
      shard,
      url: server.url,
      group,
      memberId: 'm',
      logger,
      ...readerOptions,
      ...exactlyOnceHandler(group, 'm', trace, {
        poison: 4,
        pause: async (seq, call) => {
          if (seq === 0 && call === 1) {
            firstEntered.reach();
            await snapshotTaken.promise;
          }
        },
      }),
    }).start();
    await firstEntered.wait();
    const snapshot = server.snapshot();
    snapshotTaken.resolve();
    // 0..3 applied, 4 refused and dead-lettered; all acked; the reader waits for new entries
    await waitFor(
      async () =>
        (await pending(redis, shard.key, group)).length === 0 &&
        (await deadLetterIds(redis, shard)).length === 1,
      { timeoutMs: 10_000, intervalMs: 10, message: 'entries 0..4 settled and acked' },
    );
    expect((await effects(group)).map((effect) => effect.seq)).toEqual([0, 1, 2, 3]);
    expect(await offsetRows(group)).toEqual([{ last: ids[4], dead_lettered_id: ids[4] }]);
    // Redis loses every ack and the dead letter; the reader's read fails, it claims 0..4 again
    const lost = await crashTo(snapshot, shard, group);
    expect(lost).toEqual({ pending: 5, deadLetters: [] });
    await waitFor(
      async () =>
        trace.calls.length >= 10 &&
        (await pending(redis, shard.key, group)).length === 0 &&
        (await deadLetterIds(redis, shard)).length === 1,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: () =>
          `0..4 delivered again, 4 dead-lettered again and nothing pending (calls ${JSON.stringify(trace.calls)}; last log lines: ${logger.lines.slice(-3).join(' | ')})`,
      },
    );
    // 0..3 skipped as applied; 4 meets the mark (ExactlyOnceEntryDeadLetteredError, before its
    // effect could run) and is dead-lettered again: the lost dead letter is written back
    expect((await effects(group)).map((effect) => effect.seq)).toEqual([0, 1, 2, 3]);
    expect(trace.ran).toEqual([0, 1, 2, 3, 4]);
    expect(counts(trace.calls)).toEqual([
      [0, 2],
      [1, 2],
      [2, 2],
      [3, 2],
      [4, 2],
    ]);
    expect(trace.skipped).toEqual([0, 1, 2, 3]);
    const [deadLetter] = await redis.xrange(shard.dlq, '-', '+');
    const field = (name: string): string | undefined => {
      const fields = deadLetter?.[1] ?? [];
      const at = fields.findIndex((value, i) => i % 2 === 0 && value === name);
      return at < 0 ? undefined : fields[at + 1];
    };
    expect({
      id: field('id'),
      reason: field('reason'),
      errorName: field('errorName'),
    }).toEqual({
      id: ids[4],
      reason: 'non-retryable',
      errorName: 'ExactlyOnceEntryDeadLetteredError',
    });
    expect(await offsetRows(group)).toEqual([{ last: ids[4], dead_lettered_id: ids[4] }]);
    expect(await pending(redis, shard.key, group)).toEqual([]);
  });

  it('the shard moves to another member after the restore: each entry applied once, in order', async () => {
    const group = 'g-moved';
    const shard = testShard(prefix, 'orders', 3);
    await grant(redis, shard, group, 'm1');
    const ids = await fill(redis, shard.key, 10, 0, 1);
    const firstEntered = point('entry 0 handed to the handler');
    const snapshotTaken = gate();
    const fifthEntered = point('entry 5 handed to the handler');
    const released = gate();
    const first = newTrace();
    const second = newTrace();
    const firstReader: ShardReader = newReader({
      shard,
      url: server.url,
      group,
      memberId: 'm1',
      logger: new CapturingLogger(),
      ...readerOptions,
      ...exactlyOnceHandler(group, 'm1', first, {
        pause: async (seq, call) => {
          if (seq === 0 && call === 1) {
            firstEntered.reach();
            await snapshotTaken.promise;
          }
          if (seq === 5 && call === 6) {
            fifthEntered.reach();
            await released.promise;
          }
        },
      }),
    });
    firstReader.start();
    await firstEntered.wait();
    const snapshot = server.snapshot();
    snapshotTaken.resolve();
    await fifthEntered.wait();
    await waitFor(async () => (await pending(redis, shard.key, group)).length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entries 0..4 acked',
    });
    const lost = await crashTo(snapshot, shard, group);
    expect(lost).toEqual({ pending: 10, deadLetters: [] });
    // the coordinator gives the shard to m2 while m1 is still inside 5's handler call: m2 claims
    // 0..9 (0..4 pending again); m1 then carries on with 5 (a late attempt the row lock orders
    // against m2's) and is fenced at its ack
    await grant(redis, shard, group, 'm2', 2);
    newReader({
      shard,
      url: server.url,
      group,
      memberId: 'm2',
      logger: new CapturingLogger(),
      ...readerOptions,
      ...exactlyOnceHandler(group, 'm2', second),
    }).start();
    await waitFor(() => second.calls.length >= 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: () => `m2 to take over 0..4 (calls ${JSON.stringify(second.calls)})`,
    });
    released.resolve();
    await waitFor(
      async () =>
        firstReader.status === 'lost' &&
        (await effects(group)).length >= 10 &&
        (await pending(redis, shard.key, group)).length === 0,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: () =>
          `m1 fenced, 0..9 applied and nothing pending (m1 ${firstReader.status} ${JSON.stringify(first.calls)}, m2 ${JSON.stringify(second.calls)})`,
      },
    );
    const committed = await effects(group);
    expect(committed.map((effect) => effect.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(committed.map((effect) => effect.entryId)).toEqual(ids);
    // m1 applied 0..4 (and 5 if its late attempt came first); m2 found 0..4 applied
    expect(committed.slice(0, 5).map((effect) => effect.appliedBy)).toEqual(Array(5).fill('m1'));
    expect(counts([...first.ran, ...second.ran])).toEqual(ids.map((_, seq) => [seq, 1]));
    expect(second.skipped.slice(0, 5)).toEqual([0, 1, 2, 3, 4]);
    expect(first.calls).toEqual([0, 1, 2, 3, 4, 5]);
    expect(await offsetRows(group)).toEqual([{ last: ids[9], dead_lettered_id: null }]);
    expect(await pending(redis, shard.key, group)).toEqual([]);
    expect(await deadLetterIds(redis, shard)).toEqual([]);
  });
});
