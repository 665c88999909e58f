import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkInvariants,
  formatInvariantReport,
  type HandledRecord,
} from '../../support/invariants/index.js';
import { redisUrl } from '../../support/redis.js';
import { GroupRun, STREAM } from './group-run.js';
import { type MemberApp, startMemberApp } from './member-app.js';
import { waitFor } from '../../support/wait.js';

const SESSION_TIMEOUT_MS = 3000;
const STALL_MS = 4500;

/** Blocks this thread (the event loop with it) for `ms`, as a CPU-bound handler or a long GC pause would. */
function stallEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

// Suite 2, sibling run: a member whose event loop stalls past the session timeout (a handler
// blocking the thread) is expired and its shards move. When the loop runs again, reads that
// Redis had answered before the stall are still waiting to be processed: the member must not
// start handlers for shards it lost (its lease ran out), and none of its acks may land.
describe('e2e: a member whose event loop stalls past the session timeout', () => {
  let run: GroupRun;
  let stalled: MemberApp | undefined;

  beforeAll(async () => {
    run = await GroupRun.start({
      label: 'e2e-stalled',
      shards: 4,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
  });
  afterAll(async () => {
    await stalled?.app.close();
    await run?.close();
  });

  it('starts no handler and lands no ack for the shards it lost during the stall', async () => {
    let stalledOnce = false;
    stalled = await startMemberApp({
      coordinatorUrl: run.coordinator.url,
      redis: redisUrl(),
      group: run.group,
      memberId: 'stalled',
      handle: async (message) => {
        // the first stalling message to be handled stalls the loop (once)
        if (message.key.startsWith('stall-') && !stalledOnce) {
          stalledOnce = true;
          stallEventLoop(STALL_MS);
        }
      },
    });
    await run.startWorker('healthy');
    await run.waitForMembers(['stalled', 'healthy']);
    const app = stalled;
    await waitFor(() => app.runtime.status().held.length === 2, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the stalled member to read its 2 shards',
    });
    const [a, b] = (await run.shardsOf('stalled')) as [number, number];
    const routing = await run.producer.routingOf();
    const keysOf = (shard: number, prefix: string, n: number): string[] =>
      Array.from({ length: 300 }, (_, i) => `${prefix}${i}`)
        .filter((k) => routing.shardFor(k) === shard)
        .slice(0, n);
    // Both readers are blocked in their reads. One transaction wakes both while this thread (the
    // stalled member's event loop) is busy: when the loop polls again, both replies are there.
    // Whichever is processed first runs the stalling handler; the other waits behind it in the
    // same turn of the loop — and is processed after the stall, when the member's lease has run
    // out and its shards belong to the healthy member.
    const { shards } = await run.streamRouting();
    const keyOf = (shard: number): string => shards.find((x) => x.id === shard)?.key as string;
    const stallKeys = [keysOf(a, 'stall-', 1)[0] as string, keysOf(b, 'stall-', 1)[0] as string];
    const batch = [
      { key: stallKeys[0] as string, shard: a },
      ...keysOf(a, 'a-', 3).map((key) => ({ key, shard: a })),
      { key: stallKeys[1] as string, shard: b },
      ...keysOf(b, 'b-', 3).map((key) => ({ key, shard: b })),
    ];
    const tx = run.redis.multi();
    for (const m of batch)
      tx.xadd(keyOf(m.shard), '*', 'key', m.key, 'payload', JSON.stringify({ seq: 0 }));
    const sentAt = Date.now();
    const written = tx.exec(); // (written to the socket at once)
    stallEventLoop(300);
    const ids = ((await written) ?? []).map(([error, id]) => {
      if (error) throw error;
      return id as string;
    });
    const sent = batch.map((m, i) => ({
      key: m.key,
      seq: 0,
      shard: m.shard,
      id: ids[i] as string,
    }));
    run.producer.produced.push(...sent);

    await run.waitDrained(20_000);
    await waitFor(async () => (await run.shardsOf('stalled')).length > 0, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the stalled member to rejoin',
    });
    await waitFor(() => app.runtime.status().held.length > 0, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the stalled member to read again',
    });
    // after the rejoin it works (and acks) normally again
    const rejoined = await run.shardsOf('stalled');
    await run.producer.publishTogether(rejoined.flatMap((shard) => keysOf(shard, 'after-', 2)));
    await run.waitDrained(10_000);
    process.stdout.write(
      `stalled member: all handled and acked ${Date.now() - sentAt} ms after the stalling batch was sent\n`,
    );

    const collected = await run.collect();
    const inProcess: HandledRecord[] = app.handled.map((h) => ({
      m: h.memberId,
      st: STREAM,
      s: h.shard,
      k: h.key,
      id: h.id,
      q: h.seq,
      d: h.deliveryCount,
      t0: h.t0,
      t1: h.t1,
    }));
    // (the workers' ack records, when they write them, plus the in-process member's)
    const acks = collected.input.acks === null ? null : [...collected.input.acks, ...app.acks];
    const input = { ...collected.input, handled: [...collected.input.handled, ...inProcess], acks };
    const report = checkInvariants(input);
    process.stdout.write(`\n${formatInvariantReport(report, 'stalled member run')}\n`);
    expect(report.results.zombieSafety.byKind['handled-without-ownership'] ?? 0).toBe(0);
    expect(report.results.noLoss.ok).toBe(true);
    expect(report.results.perKeyOrder.ok).toBe(true);
    expect(report.results.singleOwner.ok).toBe(true);
    // none of its acks was sent while it did not own the shard (its own ack activity; checked
    // on its own too, in case the workers write no ack records)
    expect(app.acks.length).toBeGreaterThan(0);
    const ownAcks = checkInvariants({ ...input, acks: app.acks }).results.zombieSafety;
    expect(ownAcks.byKind['acked-without-ownership'] ?? 0).toBe(0);
    expect(report.results.zombieSafety.ok).toBe(true);
    // the member did lose its shards during the stall
    expect(
      collected.events.some((e) => e.type === 'MEMBER_EXPIRED' && e.data.memberId === 'stalled'),
    ).toBe(true);
    // whatever the stalled member did not get acked (the stalling message itself at least: its
    // late ack was refused) was delivered again and handled by the healthy member
    const ackedByStalled = new Set(app.acks.flatMap((a) => a.a.map((id) => `${a.s}/${id}`)));
    const redelivered = sent.filter((m) => !ackedByStalled.has(`${m.shard}/${m.id}`));
    // (one shard's whole batch: it was never handled by the stalled member, or not acked)
    expect(redelivered.length).toBeGreaterThanOrEqual(4);
    for (const m of redelivered) {
      expect(
        collected.input.handled.some((h) => h.s === m.shard && h.id === m.id && h.m === 'healthy'),
        `${m.key} handled by the healthy member`,
      ).toBe(true);
    }
  });
});
