import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GroupRun } from './group-run.js';
import { waitFor } from '../../support/wait.js';

const SESSION_TIMEOUT_MS = 3000;

// Suite 2, sibling run: the worst moment to freeze a member. It is waiting for new entries on
// its shard when it is SIGSTOPped; entries arrive while it is frozen (Redis may already hand
// them to its pending read), it expires, the other member takes the shard over and handles
// them. After SIGCONT the thawed member must neither handle nor ack any of them — not even
// those its last read had already received — and must rejoin cleanly.
describe('e2e: a member frozen while its read is pending', () => {
  let run: GroupRun;

  beforeAll(async () => {
    run = await GroupRun.start({
      label: 'e2e-frozen',
      shards: 2,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    await run.startWorker('z1');
    await run.startWorker('z2');
  });
  afterAll(async () => {
    await run?.close();
  });

  it('handles and acks nothing for the shard it lost while frozen', async () => {
    await run.waitForMembers(['z1', 'z2']);
    const [frozenShard] = await run.shardsOf('z1');
    const routing = await run.producer.routingOf();
    const keys = Array.from({ length: 100 }, (_, i) => `k${i}`)
      .filter((k) => routing.shardFor(k) === frozenShard)
      .slice(0, 5);
    // warm up: z1 handles its shard, then waits for more
    for (const key of keys) await run.producer.publishOne(key);
    await run.waitDrained(10_000);

    const z1 = run.workers.get('z1');
    z1?.process.signal('SIGSTOP');
    const stopAt = Date.now();
    for (let i = 0; i < 4; i++) for (const key of keys) await run.producer.publishOne(key);
    await waitFor(async () => (await run.shardsOf('z2')).length === 2, {
      timeoutMs: SESSION_TIMEOUT_MS + 5000,
      intervalMs: 20,
      message: 'z2 to take over the frozen member’s shard',
    });
    await run.waitDrained(10_000);
    const tookOverMs = Date.now() - stopAt;
    z1?.process.signal('SIGCONT');
    await waitFor(async () => (await run.shardsOf('z1')).length === 1, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'z1 to rejoin and be granted a shard again',
    });
    // more traffic after the rejoin: both members work normally again
    for (const key of keys) await run.producer.publishOne(key);
    for (const key of Array.from({ length: 100 }, (_, i) => `j${i}`).slice(0, 20))
      await run.producer.publishOne(key);
    await run.waitDrained(15_000);
    process.stdout.write(`frozen member: shard taken over ${tookOverMs} ms after SIGSTOP\n`);

    const { report, input } = await run.check('frozen member run');
    const zombie = report.results.zombieSafety;
    expect(zombie.byKind['handled-without-ownership'] ?? 0).toBe(0);
    expect(zombie.byKind['acked-without-ownership'] ?? 0).toBe(0);
    expect(report.ok).toBe(true);
    // the entries published during the freeze were handled by z2
    const duringFreeze = input.produced.slice(keys.length, keys.length * 5);
    for (const m of duringFreeze) {
      expect(input.handled.some((h) => h.s === m.shard && h.id === m.id && h.m === 'z2')).toBe(
        true,
      );
    }
  });
});
