import { describe, expect, it } from 'vitest';
import {
  Semaphore,
  type ShardLostReason,
} from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import {
  deferred,
  fill,
  grant,
  pending,
  seqOf,
  testShard,
  useReaders,
} from './data-plane-fixtures.js';

describe("ShardReader: ordering 'key' when the shard is lost", () => {
  const { prefix, redis } = useRedisPrefix('key-loss');
  const newReader = useReaders();

  it('starts no handler call after the loss: a permit wait and a retry backoff end at once, the entries stay pending', async () => {
    // Regression: the keyed dispatch kept running after the reader learned the shard was lost.
    // An entry waiting for a stream limiter permit got one when the running handler ended and
    // was handed to the handler while the new owner handled the same key; an entry in retry
    // backoff held the reader for its whole delay.
    const shard = testShard(prefix, 'orders', 0);
    await grant(redis(), shard, 'g', 'A', 1);
    const ids = await fill(redis(), shard.key, 3); // keys k0, k1, k2
    const gate = deferred();
    const calls: Array<{ seq: number; status: string }> = [];
    const lost: ShardLostReason[] = [];
    const a = newReader({
      shard,
      group: 'g',
      memberId: 'A',
      ordering: 'key',
      maxConcurrency: 4,
      maxAckDelayMs: 20,
      limiter: new Semaphore(1), // one handler call at a time on the stream
      retry: { initialDelayMs: 20_000, maxDelayMs: 20_000, multiplier: 1 },
      random: () => 1, // the full backoff: 20 s
      handle: async (m) => {
        const seq = seqOf(m.payload);
        calls.push({ seq, status: a.status });
        if (seq === 0) throw new Error('entry 0 fails: into retry backoff');
        if (seq === 1) await gate.promise; // holds the only permit; entry 2 waits for it
      },
      onLost: (reason) => void lost.push(reason),
    });
    a.start();
    await waitFor(() => calls.some((c) => c.seq === 1) && a.counters.failed === 1, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entry 0 in backoff, entry 1 running, entry 2 waiting for the permit',
    });
    // the coordinator moves the shard to B while A's handler of entry 1 still runs
    await grant(redis(), shard, 'g', 'B', 2);
    await waitFor(() => a.status === 'lost', {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'A learns the shard is lost',
    });
    const lostAt = performance.now();
    gate.resolve(); // the running handler ends: its permit is free again
    await Promise.race([
      a.whenEnded(),
      new Promise((resolve) => setTimeout(resolve, 5000).unref()),
    ]);
    // entry 2 never reached the handler; entry 0 was not retried
    expect(calls).toEqual([
      { seq: 0, status: 'reading' },
      { seq: 1, status: 'reading' },
    ]);
    expect(performance.now() - lostAt).toBeLessThan(5000); // not the 20 s backoff
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ code: 'FENCED', currentOwner: '2:B' });
    // nothing was acknowledged or dead-lettered: all three stay pending for B
    const left = await pending(redis(), shard.key, 'g');
    expect(left.map((p) => p[0])).toEqual(ids);
    expect(await redis().xlen(shard.dlq)).toBe(0);
  }, 30_000);
});
