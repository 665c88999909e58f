import type { DeadLetterReplayResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForNoProblems } from '../../support/wait.js';
import type {
  DeadLetteredEntry,
  HandledRecord,
  ProducedMessage,
} from '../../support/invariants/index.js';
import { GroupRun } from './group-run.js';

const MAX_DELIVERIES = 3;

// Suite 3: a message whose handler always throws is retried MAX_DELIVERIES times with backoff
// (100 ms, then 200 ms: the library's default retry policy), then written to the stream's
// dead-letter stream with the error and acked; the messages behind it on its shard are handled
// afterwards, in order, and the other shard is not held up meanwhile.
describe('e2e: retry then dead-letter', () => {
  let run: GroupRun;

  beforeAll(async () => {
    run = await GroupRun.start({ label: 'e2e-dlq', shards: 2 });
    await run.startWorker('r1', {
      FAIL_KEY_PREFIX: 'poison-',
      MAX_DELIVERIES: String(MAX_DELIVERIES),
    });
  });
  afterAll(async () => {
    await run?.close();
  });

  it('retries maxDeliveries times, dead-letters with the error, acks, and moves on in order', async () => {
    await run.waitForMembers(['r1']);
    const routing = await run.producer.routingOf();
    const poisonKey = 'poison-1';
    const poisonShard = routing.shardFor(poisonKey);
    // two ordinary keys on the poison's shard, one on the other shard
    const candidates = Array.from({ length: 200 }, (_, i) => `k${i}`);
    const sameShard = candidates.filter((k) => routing.shardFor(k) === poisonShard).slice(0, 2);
    const otherShard = candidates.find((k) => routing.shardFor(k) !== poisonShard) as string;
    expect(sameShard).toHaveLength(2);

    const before: ProducedMessage[] = [];
    for (let i = 0; i < 3; i++)
      for (const key of [...sameShard, otherShard]) before.push(await run.producer.publishOne(key));
    const poison = await run.producer.publishOne(poisonKey);
    const poisonPublishedAt = Date.now();
    const behind: ProducedMessage[] = [];
    for (let i = 0; i < 5; i++)
      for (const key of [...sameShard, otherShard]) behind.push(await run.producer.publishOne(key));

    await run.waitDrained(20_000);
    const { report, input } = await run.check('retry / dead-letter run');

    // the dead-letter entry: the poison message, with the error, after MAX_DELIVERIES deliveries
    const dlq = input.deadLettered as DeadLetteredEntry[];
    expect(dlq).toHaveLength(1);
    expect(dlq[0]).toMatchObject({
      shard: poisonShard,
      id: poison.id,
      reason: 'max-deliveries',
      deliveryCount: MAX_DELIVERIES,
      memberId: 'r1',
    });
    expect(dlq[0]?.error).toContain(`refusing ${poisonKey}`);
    const raw = await run.redis.xrange((await run.streamRouting()).deadLetterKey, '-', '+');
    const fields = raw[0]?.[1] ?? [];
    const failedAt = Date.parse(fields[fields.indexOf('failedAt') + 1] as string);
    expect(JSON.parse(fields[fields.indexOf('payload') + 1] as string)).toEqual({ seq: 0 });
    // backoff: full jitter, up to 100 ms after the first failure and up to 200 ms after the second,
    // so there is no lower bound to check here (the bounds are property-tested in backoff.spec.ts,
    // and shard-reader-retry.e2e-spec.ts measures the gaps with a source that draws the ceiling)
    const retryMs = failedAt - poisonPublishedAt;
    process.stdout.write(`dead-lettered ${retryMs} ms after publishing (backoff ≤ 100 + 200 ms)\n`);
    // the handler was really called MAX_DELIVERIES times (each failure is logged with its delivery)
    const failures =
      [...run.workers.values()][0]?.process
        .output()
        .match(new RegExp(`handler failed for entry ${poison.id}[^\\n]*`, 'g')) ?? [];
    expect(failures.length).toBe(MAX_DELIVERIES);

    // the poison message never counted as handled, but it was acked: nothing is left pending
    expect(input.handled.some((h) => h.k === poisonKey)).toBe(false);
    expect(report.counts.pendingAtEnd).toBe(0);
    expect(report.ok).toBe(true);

    // behind it on the same shard: handled only after it was dead-lettered, in order
    const handledOf = (m: ProducedMessage): HandledRecord =>
      input.handled.find((h) => h.s === m.shard && h.id === m.id) as HandledRecord;
    const behindSame = behind.filter((m) => m.shard === poisonShard);
    for (const m of behindSame) expect(handledOf(m).t0).toBeGreaterThanOrEqual(failedAt - 1);
    const starts = behindSame.map((m) => handledOf(m).t0);
    expect([...starts].sort((a, b) => a - b)).toEqual(starts);
    // the other shard went on meanwhile
    const behindOther = behind.filter((m) => m.shard !== poisonShard);
    expect(behindOther.some((m) => handledOf(m).t1 < failedAt)).toBe(true);
    expect(before.every((m) => handledOf(m).t1 < failedAt)).toBe(true);
  });

  it('the dead letter records the error class; replayed through the coordinator, the worker gets it again, marked', async () => {
    const routing = await run.streamRouting();
    const [first] = await run.redis.xrange(routing.deadLetterKey, '-', '+');
    const dlqId = first?.[0] as string;
    const fields = first?.[1] ?? [];
    expect(fields[fields.indexOf('errorName') + 1]).toBe('Error');

    const res = await run.api.post<DeadLetterReplayResponse>(
      `/v1/streams/${routing.stream}/dead-letters/replay`,
      { ids: [dlqId] },
    );
    expect(res.status).toBe(200);
    expect(res.body.results).toMatchObject([{ id: dlqId, outcome: 'replayed' }]);
    // The handler still refuses the key: the replayed message comes back as a new dead letter,
    // which names the one it was replayed from.
    let again: [string, string[]] | undefined;
    await waitForNoProblems(
      async () => {
        again = (await run.redis.xrange(routing.deadLetterKey, `(${dlqId}`, '+'))[0];
        return again ? [] : ['no second dead letter yet'];
      },
      {
        timeoutMs: 20_000,
        message: 'the replayed message is handled (and dead-lettered) again',
        retryErrors: true,
      },
    );
    const replayed = again?.[1] ?? [];
    expect(JSON.parse(replayed[replayed.indexOf('headers') + 1] as string)).toEqual({
      'rsc-replay-of': dlqId,
    });
    expect(replayed[replayed.indexOf('payload') + 1]).toBe(fields[fields.indexOf('payload') + 1]);
    expect(replayed[replayed.indexOf('id') + 1]).toBe(res.body.results[0]?.entryId);
  });
});
