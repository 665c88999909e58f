import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEffects, formatEffectsReport } from '../../support/effects-check.js';
import { readDeadLetters } from '../../support/invariants/index.js';
import { createTestSchema, type TestSchema } from '../../support/postgres-schema.js';
import { waitFor } from '../../support/wait.js';
import { GroupRun } from './group-run.js';

const SESSION_TIMEOUT_MS = 3000;

// Example workers in their exactly-once mode (EXACTLY_ONCE_DATABASE_URL): each message writes
// one order_effects row through @ExactlyOnce(). Nothing may be applied twice or go missing when
// a worker is SIGKILLed between its commit and its ack, when a worker is SIGSTOPped (a zombie)
// and wakes after the others took its shards over, when handlers fail (retries, dead letters),
// or when PostgreSQL drops every connection (pg_terminate_backend from another session; a real
// server restart, on a private cluster, is exactly-once-postgres-restart.e2e-spec.ts).
describe('e2e: exactly-once effects into PostgreSQL with real workers', () => {
  let run: GroupRun;
  let db: TestSchema;
  let workerEnv: Record<string, string>;
  let appName: string;

  beforeAll(async () => {
    db = await createTestSchema('eo_group');
    appName = `eo_${db.schema}`;
    const url = new URL(db.url);
    url.searchParams.set('application_name', appName);
    // a frozen owner's open transaction is aborted by the server, so its lock does not stall
    // the new owner (docs/exactly-once.md)
    url.searchParams.set(
      'options',
      `${url.searchParams.get('options')} -c idle_in_transaction_session_timeout=2000`,
    );
    workerEnv = { EXACTLY_ONCE_DATABASE_URL: url.toString(), MAX_DELIVERIES: '3' };
    run = await GroupRun.start({
      label: 'e2e-exactly-once',
      shards: 8,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
  });
  afterAll(async () => {
    await run?.close();
    await db?.drop();
  });

  it('crash between commit and ack, a zombie, failing handlers and dropped connections', async () => {
    await run.startWorker('e1', workerEnv);
    // killed as it learns its 40th handler call committed, before the ack
    await run.startWorker('e2', { ...workerEnv, CRASH_AFTER_COMMITS: '40' });
    await run.startWorker('e3', { ...workerEnv, FAIL_KEY_PREFIX: 'bad' });
    await run.waitForMembers(['e1', 'e2', 'e3']);

    await run.producer.produce({ total: 300, keys: 60, ratePerSecond: 600 });
    await waitFor(() => run.workers.get('e2')?.process.running === false, {
      timeoutMs: 20_000,
      message: 'e2 to kill itself after a commit',
    });
    // every connection of the workers is dropped, as by a PostgreSQL restart
    await db.pool.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
      [appName],
    );
    // keys that fail on e3 only: retried there, dead-lettered, or handled by another owner
    await run.producer.produce({ total: 100, keys: 20, ratePerSecond: 500, keyPrefix: 'bad' });
    // the zombie: frozen while it owns shards, thawed after the others took them over
    const e3 = run.workers.get('e3')!;
    e3.process.signal('SIGSTOP');
    const e1Shards = async (): Promise<number> => (await run.shardsOf('e1')).length;
    await waitFor(async () => (await e1Shards()) === 8, {
      timeoutMs: SESSION_TIMEOUT_MS + 15_000,
      intervalMs: 50,
      message: 'e1 to own every shard while e3 is frozen',
    });
    await run.producer.produce({ total: 150, keys: 60, ratePerSecond: 600 });
    e3.process.signal('SIGCONT');
    await run.producer.produce({ total: 100, keys: 60, ratePerSecond: 600 });
    await run.waitDrained(60_000);

    const routing = await run.streamRouting();
    const dead = await readDeadLetters(run.redis, routing.deadLetterKey);
    const report = await checkEffects(db.pool, {
      produced: run.producer.produced,
      deadLettered: dead,
    });
    const copies = dead.length - new Set(dead.map((d) => `${d.shard}/${d.id}`)).size;
    process.stdout.write(
      `${formatEffectsReport(report)}; dead letters ${dead.length} (${copies} copies)\n`,
    );
    expect(report.appliedTwice).toEqual([]);
    expect(report.missing).toEqual([]);
    expect(report.deadLetteredButApplied).toBe(0);
    expect(report.unexpected).toEqual([]);
    // Dead letters are at least once (docs/exactly-once.md): a member that wrote one and died
    // or froze before its ack leaves a second copy with the same source id to the next owner.
    expect(report.rows).toBe(run.producer.produced.length - (dead.length - copies));
    // the entry e2 committed last was redelivered and skipped: its row names e2 although e2
    // never acked it
    const byE2 = await db.pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM order_effects WHERE member_id = 'e2'",
    );
    expect(byE2.rows[0]!.n).toBeGreaterThanOrEqual(40);
    const offsets = await db.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM rsc_applied_offsets',
    );
    expect(offsets.rows[0]!.n).toBe(8);
  }, 180_000);
});
