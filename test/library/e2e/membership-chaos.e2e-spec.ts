import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandledRecord, OwnershipInterval } from '../../support/invariants/index.js';
import { GroupRun, STREAM } from './group-run.js';
import { waitFor } from '../../support/wait.js';

const SESSION_TIMEOUT_MS = 3000;
const HEARTBEAT_INTERVAL_MS = 500;

/** Wall-clock ms of an event. */
const atOf = (e: GroupEventEntry): number => Date.parse(e.at);

/** The shards `member` owned at time `t` per the timeline. */
function ownedAt(ownership: readonly OwnershipInterval[], member: string, t: number): number[] {
  return ownership
    .filter(
      (i) =>
        i.memberId === member && i.stream === STREAM && i.from <= t && (i.to === null || i.to >= t),
    )
    .map((i) => i.shard)
    .sort((a, b) => a - b);
}

/** When each of `shards` was next granted to a member other than `member` after `after`. */
function nextGrants(
  ownership: readonly OwnershipInterval[],
  member: string,
  shards: readonly number[],
  after: number,
): Map<number, OwnershipInterval> {
  const out = new Map<number, OwnershipInterval>();
  for (const shard of shards) {
    const next = ownership
      .filter((i) => i.shard === shard && i.memberId !== member && i.from >= after)
      .sort((a, b) => a.from - b.from)[0];
    if (next) out.set(shard, next);
  }
  return out;
}

// Suite 2: the same invariants while the membership changes under load: a member joins, one
// leaves with SIGTERM (its shards move at once), one is SIGKILLed (its shards and pending
// entries move after the session timeout), one is SIGSTOPped past the session timeout and then
// SIGCONTed (it must neither handle nor ack anything for the shards it lost).
describe('e2e: membership changes during a 20,000-message run', () => {
  let run: GroupRun;

  beforeAll(async () => {
    run = await GroupRun.start({
      label: 'e2e-chaos',
      heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
    });
    await run.startWorker('w1', { HANDLER_DELAY_MS: '1' });
    // slower handlers: w2 and w3 always have a batch in flight when they are killed / frozen
    await run.startWorker('w2', { HANDLER_DELAY_MS: '5' });
    await run.startWorker('w3', { HANDLER_DELAY_MS: '5' });
  });
  afterAll(async () => {
    await run?.close();
  });

  it('keeps every invariant through a join, a SIGTERM, a SIGKILL and a SIGSTOP/SIGCONT', async () => {
    await run.waitForMembers(['w1', 'w2', 'w3']);
    let published = 0;
    // Production holds at `limit` until the current phase is done, so that messages keep
    // flowing through every phase however slow the (shared) machine is.
    let limit = 3000;
    let wake: (() => void) | undefined;
    const allowUpTo = (n: number): void => {
      limit = n;
      wake?.();
    };
    const producing = run.producer.produce({
      total: 20_000,
      keys: 500,
      ratePerSecond: 1000,
      onProgress: (n) => {
        published = n;
      },
      holdAt: (n) =>
        n < limit
          ? undefined
          : new Promise<void>((resolve) => {
              wake = resolve;
            }),
    });
    // (a failure below closes the run while this is still publishing: no unhandled rejection)
    producing.catch(() => undefined);
    const timeline: string[] = [];
    const t0 = Date.now();
    const mark = (what: string): number => {
      const now = Date.now();
      timeline.push(`${String(now - t0).padStart(6)} ms  ${what}`);
      return now;
    };
    const publishedAtLeast = (n: number): Promise<number> =>
      waitFor(() => published >= n, {
        timeoutMs: 30_000,
        intervalMs: 20,
        message: `${n} messages published`,
      });

    // 1. a member joins
    await publishedAtLeast(2000);
    mark('w4 starting');
    await run.startWorker('w4', { HANDLER_DELAY_MS: '1' });
    await waitFor(async () => (await run.shardsOf('w4')).length > 0, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'w4 to be granted shards',
    });
    mark(`w4 owns shards ${String(await run.shardsOf('w4'))}`);
    allowUpTo(6000);

    // 2. a member leaves with SIGTERM: its shards move at once
    await publishedAtLeast(5000);
    const termAt = mark(`SIGTERM w1 (owns ${String(await run.shardsOf('w1'))})`);
    // (Nest's shutdown hooks close the app, then re-raise the signal: the exit is by SIGTERM)
    await run.workers.get('w1')?.process.stop('SIGTERM');
    mark('w1 exited');
    allowUpTo(9500);

    // 3. a member is SIGKILLed with entries in flight: they move after the session timeout
    await publishedAtLeast(8000);
    const w2 = run.workers.get('w2');
    const { shards } = await run.streamRouting();
    const pendingOf = async (consumer: string): Promise<Array<{ shard: number; id: string }>> => {
      const out: Array<{ shard: number; id: string }> = [];
      for (const { id: shard, key } of shards) {
        const rows = (await run.redis.xpending(
          key,
          run.group,
          '-',
          '+',
          10_000,
          consumer,
        )) as Array<[string]>;
        for (const [id] of rows) out.push({ shard, id });
      }
      return out;
    };
    await waitFor(async () => (await pendingOf('w2')).length > 0, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'w2 to have entries in flight',
    });
    const killAt = mark('SIGKILL w2');
    await w2?.process.kill();
    const orphans = await pendingOf('w2');
    // its last heartbeat, as the coordinator saw it (the session timeout runs from there)
    const lastBeat = Date.parse(
      (await run.describe())?.members.find((m) => m.memberId === 'w2')?.lastHeartbeatAt ?? '',
    );
    mark(`w2 killed with ${orphans.length} entries pending`);
    expect(orphans.length).toBeGreaterThan(0);
    await waitFor(async () => !(await run.describe())?.members.some((m) => m.memberId === 'w2'), {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'w2 to expire',
    });
    mark('w2 expired');
    await run.startWorker('w5', { HANDLER_DELAY_MS: '1' });
    await run.waitForMembers(['w3', 'w4', 'w5']);
    mark('w5 started, group stable');
    allowUpTo(13_000);

    // 4. a member is frozen past the session timeout, then thawed
    await publishedAtLeast(12_000);
    const w3 = run.workers.get('w3');
    const stopAt = mark(`SIGSTOP w3 (owns ${String(await run.shardsOf('w3'))})`);
    w3?.process.signal('SIGSTOP');
    allowUpTo(16_500);
    await waitFor(async () => !(await run.describe())?.members.some((m) => m.memberId === 'w3'), {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'w3 to expire',
    });
    mark('w3 expired');
    // let the new owners work on its shards for a while, then thaw it
    await waitFor(() => Date.now() >= stopAt + SESSION_TIMEOUT_MS + 1500, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the freeze to last',
    });
    const contAt = mark('SIGCONT w3');
    w3?.process.signal('SIGCONT');
    await waitFor(async () => (await run.shardsOf('w3')).length > 0, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'w3 to rejoin and be granted shards',
    });
    mark(`w3 rejoined with shards ${String(await run.shardsOf('w3'))}`);
    allowUpTo(20_000);

    await producing;
    mark('all 20,000 published');
    await run.waitDrained(60_000);
    mark('all consumed and acked');
    process.stdout.write(`\nchaos timeline:\n${timeline.join('\n')}\n`);

    const { report, events, ownership, input } = await run.check('membership chaos run');
    expect(report.counts.produced).toBe(20_000);
    expect(report.results.noLoss.violations).toBe(0);
    expect(report.results.perKeyOrder.violations).toBe(0);
    expect(report.results.singleOwner.violations).toBe(0);
    expect(report.results.zombieSafety.violations).toBe(0);
    expect(report.results.duplicates.violations).toBe(0);
    expect(report.ok).toBe(true);

    const eventOf = (type: string, member: string, after: number): GroupEventEntry | undefined =>
      events.find((e) => e.type === type && e.data.memberId === member && atOf(e) >= after - 5);

    // SIGTERM: a graceful leave; every shard w1 owned was granted to another member well
    // within the session timeout.
    const left = eventOf('MEMBER_LEFT', 'w1', termAt);
    expect(left, 'w1 left with a leave heartbeat').toBeDefined();
    const w1Shards = ownedAt(ownership, 'w1', termAt);
    expect(w1Shards.length).toBeGreaterThan(0);
    const w1Grants = nextGrants(ownership, 'w1', w1Shards, termAt);
    expect([...w1Grants.keys()].sort((a, b) => a - b)).toEqual(w1Shards);
    const handOffMs = Math.max(...[...w1Grants.values()].map((i) => i.from)) - termAt;
    process.stdout.write(
      `SIGTERM hand-off: shards ${String(w1Shards)} re-granted ${handOffMs} ms after the signal\n`,
    );
    expect(handOffMs).toBeLessThan(SESSION_TIMEOUT_MS / 2);

    // SIGKILL: expired by the session timeout; its shards re-granted only after that; its
    // pending entries handled again (a new delivery) by the new owners.
    const expired = eventOf('MEMBER_EXPIRED', 'w2', killAt);
    expect(expired, 'w2 expired').toBeDefined();
    const expiredAt = atOf(expired as GroupEventEntry);
    process.stdout.write(
      `SIGKILL: w2 expired ${expiredAt - killAt} ms after the kill, ${expiredAt - lastBeat} ms after its last heartbeat\n`,
    );
    expect(expiredAt).toBeGreaterThan(killAt);
    expect(expiredAt - lastBeat).toBeGreaterThanOrEqual(SESSION_TIMEOUT_MS - 5);
    const w2Shards = ownedAt(ownership, 'w2', killAt);
    const w2Grants = nextGrants(ownership, 'w2', w2Shards, killAt);
    expect([...w2Grants.keys()].sort((a, b) => a - b)).toEqual(w2Shards);
    for (const grant of w2Grants.values()) expect(grant.from).toBeGreaterThanOrEqual(expiredAt);
    // (the checker knew of the kill: an ack Redis applied just before it, whose record died with
    // w2, counts as `ackRecordLostInCrash`, not as a lost message)
    expect(input.crashes?.map((c) => c.memberId)).toEqual(['w2']);
    const byMessage = new Map<string, HandledRecord[]>();
    for (const h of input.handled) {
      const list = byMessage.get(`${h.s}/${h.id}`) ?? [];
      list.push(h);
      byMessage.set(`${h.s}/${h.id}`, list);
    }
    for (const orphan of orphans) {
      const after = (byMessage.get(`${orphan.shard}/${orphan.id}`) ?? []).filter(
        (h) => h.m !== 'w2',
      );
      expect(
        after.length,
        `orphan ${orphan.shard}/${orphan.id} handled by another member`,
      ).toBeGreaterThan(0);
      const first = after[0] as HandledRecord;
      expect(first.d).toBeGreaterThanOrEqual(2);
      expect(first.t0).toBeGreaterThanOrEqual(expiredAt);
    }

    // SIGSTOP: expired while frozen, rejoined after the thaw; the checker's zombie safety above
    // shows it neither started a handler nor acked while it did not own the shards.
    const frozenExpiry = eventOf('MEMBER_EXPIRED', 'w3', stopAt);
    expect(frozenExpiry, 'w3 expired while frozen').toBeDefined();
    expect(ownedAt(ownership, 'w3', stopAt).length, 'w3 owned shards when frozen').toBeGreaterThan(
      0,
    );
    expect(atOf(frozenExpiry as GroupEventEntry)).toBeLessThan(contAt);
    expect(eventOf('MEMBER_JOINED', 'w3', contAt), 'w3 joined again after the thaw').toBeDefined();
    const w3Late = input.handled.filter(
      (h) => h.m === 'w3' && h.t1 > atOf(frozenExpiry as GroupEventEntry) && h.t0 < contAt,
    );
    process.stdout.write(
      `SIGSTOP: w3 finished ${w3Late.length} in-flight handlings after it lost its shards (not acked)\n`,
    );
  });
});
