import { existsSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../support/wait.js';
import { GroupRun } from './group-run.js';

// ordering: 'key' across a crash: a worker handling its shards' keys concurrently is killed
// (SIGKILL) with entries in flight and buffered; the survivor's claim replays them in id order
// through the same per-key gate, so no key is handled out of order across the two owners. The
// invariant checker runs in its key profile (one key at a time per member).
describe('e2e: ordering key, crash and reclaim', () => {
  let run: GroupRun;

  beforeAll(async () => {
    run = await GroupRun.start({ label: 'e2e-key-crash', shards: 4 });
    await run.startWorker('k1', { ORDERING: 'key', HANDLER_DELAY_MS: '5' });
    await run.startWorker('k2', { ORDERING: 'key', HANDLER_DELAY_MS: '20' });
  });
  afterAll(async () => {
    await run?.close();
  });

  it('keeps per-key order, loses nothing, and gives no shard to two members at once', async () => {
    await run.waitForMembers(['k1', 'k2']);
    const k2 = run.workers.get('k2');
    const produced = run.producer.produce({ total: 3000, keys: 60, ratePerSecond: 1000 });
    // kill k2 once it has handled a good part of its share (entries are in flight then)
    const handledByK2 = (): number => {
      const file = k2?.recordFile;
      return file && existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0;
    };
    await waitFor(() => handledByK2() >= 300, {
      timeoutMs: 20_000,
      intervalMs: 10,
      message: 'k2 to handle 300 messages',
    });
    await k2?.process.kill();
    await produced;
    await run.waitDrained(40_000);

    const { report, input } = await run.check('ordering key: crash and reclaim', {
      ordering: 'key',
    });
    expect(input.crashes?.map((c) => c.memberId)).toEqual(['k2']);
    const r = report.results;
    expect(r.noLoss.byKind).toEqual({});
    expect(r.perKeyOrder.byKind).toEqual({});
    expect(r.singleOwner.byKind).toEqual({});
    expect(r.duplicates.byKind).toEqual({});
    expect(report.ok).toBe(true);
    // k2 had work in flight when it died: k1 handled some of it again (a redelivery)
    const redelivered = input.handled.filter((h) => h.m === 'k1' && h.d > 1).length;
    process.stdout.write(`ordering key: k1 handled ${redelivered} reclaimed entries again\n`);
    expect(redelivered).toBeGreaterThan(0);
  });
});
