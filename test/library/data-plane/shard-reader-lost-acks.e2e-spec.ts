import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  NonRetryableError,
  type StreamShardMessage,
} from '../../../libs/stream-coordinator/src/index.js';
import { type RestartableRedis, startRestartableRedis } from '../../support/restartable-redis.js';
import { createTestRedis, uniquePrefix } from '../../support/redis.js';
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

// A Redis that loses the acks it answered last (a restart from an AOF written with `appendfsync
// everysec`, a failover to a replica that lagged) while a reader goes on with its batch: the
// reader's later acks reach the restored Redis. Nothing is lost: the entries whose acks Redis lost
// are pending again and handled again (at-least-once), after later entries of the same key were
// handled and acked, so per-key order goes back there (docs/protocol.md §12.5). A dead letter
// Redis lost with its ack is written again. (Sending the lost acks again instead would keep the
// order but make every write lost with them permanent, a dead letter included.) The same with a
// batch handler (batches of one, so that it stops where the one-at-a-time handler does).
describe.each(['shard', 'key', 'batch'] as const)('ShardReader (%s): acks Redis lost', (mode) => {
  let server: RestartableRedis;
  let redis: Redis;
  const newReader = useReaders();
  const prefix = uniquePrefix(`lost-acks-${mode}`);

  beforeAll(async () => {
    server = await startRestartableRedis();
    redis = createTestRedis({ url: server.url, maxRetriesPerRequest: null });
    redis.on('error', () => undefined); // refused while the server restarts; commands wait
  });
  afterEach(async () => {
    await redis.flushall();
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.dispose();
  });

  it('handles those entries again, leaves nothing pending, and writes the lost dead letter again', async () => {
    const shard = testShard(prefix);
    await grant(redis, shard, 'g', 'm');
    await fill(redis, shard.key, 10, 0, 1); // one key: seq 0..9 in order
    const firstEntered = deferred();
    const snapshotTaken = deferred();
    const fifthEntered = deferred();
    const restored = deferred();
    const seen: number[] = [];
    const handle = async (message: StreamShardMessage): Promise<void> => {
      const seq = seqOf(message.payload);
      seen.push(seq);
      if (seq === 0 && seen.length === 1) {
        firstEntered.resolve();
        await snapshotTaken.promise;
      }
      if (seq === 5 && seen.length === 6) {
        fifthEntered.resolve();
        await restored.promise;
      }
      if (seq === 2) throw new NonRetryableError('seq 2 is refused');
    };
    newReader({
      shard,
      url: server.url,
      group: 'g',
      memberId: 'm',
      ordering: mode === 'key' ? 'key' : 'shard',
      batchSize: 10,
      maxAckDelayMs: 0, // every handled entry is acked at once
      reconnectBackoff: { initialDelayMs: 20, maxDelayMs: 100 },
      handle,
      ...(mode === 'batch'
        ? {
            batch: { maxSize: 1 },
            handleBatch: async (messages) => {
              for (const message of messages) await handle(message);
            },
          }
        : {}),
    }).start();
    // every entry is delivered (and that delivery is in the copy), none acked yet
    await firstEntered.promise;
    const snapshot = server.snapshot();
    snapshotTaken.resolve();
    // entries 0..4 handled (2 dead-lettered) and acked; Redis answered those acks
    await fifthEntered.promise;
    await waitFor(async () => (await pending(redis, shard.key, 'g')).length === 5, {
      timeoutMs: 10_000,
      intervalMs: 10,
      message: 'entries 0..4 acked',
    });
    expect(await redis.xlen(shard.dlq)).toBe(1);
    // Redis crashes and comes back without those acks (and the dead letter): 0..9 pending again
    await server.crashToSnapshot(snapshot, async () => undefined);
    await waitFor(async () => (await pending(redis, shard.key, 'g')).length === 10, {
      timeoutMs: 10_000,
      intervalMs: 20,
      message: 'the restored Redis has every entry pending',
    });
    expect(await redis.xlen(shard.dlq)).toBe(0);
    restored.resolve();
    // 5..9 are acked on the restored Redis; 0..4 are handled again and acked: nothing pending
    await waitFor(
      async () => seen.length >= 15 && (await pending(redis, shard.key, 'g')).length === 0,
      {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: `0..4 handled again and nothing pending (seen ${JSON.stringify(seen)})`,
      },
    );
    const counts = new Map<number, number>();
    for (const seq of seen) counts.set(seq, (counts.get(seq) ?? 0) + 1);
    // 0..4 twice (handled again after the restore: one at a time or in batches after 5..9, which
    // were acked first; with `ordering: 'key'` the claim replays them before 6..9), 5..9 once
    expect([...counts.entries()].sort((a, b) => a[0] - b[0])).toEqual([
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
    expect(await redis.xlen(shard.dlq)).toBe(1);
  });
});
