import type { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { encodeEntryIds } from '../../../libs/stream-coordinator/src/data-plane/scripts/entry-id-list.js';
import { createRedisConnection } from '../../../libs/stream-coordinator/src/redis/index.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { deferred, grant, pending, testShard, useReaders } from './data-plane-fixtures.js';

/** Whether `command` is an ack script call whose id list is exactly `ids`. */
function acksExactly(command: Command, ids: readonly string[]): boolean {
  const encoded = encodeEntryIds(ids);
  return (
    (command.name === 'evalsha' || command.name === 'eval') &&
    command.args.some((arg) => Buffer.isBuffer(arg) && arg.equals(encoded))
  );
}

// The `acked` hook (metrics, the member's `acked` event, the chaos checker's ack records) says:
// these ids were in an ack Redis applied between `sentAt` and now. A member frozen (SIGSTOP) or
// stalled right after a read turn sent its ack wakes with the reply unread: timers run before the
// socket is read, so a handler settles and the lease's self-fence stops the reader first, and the
// stop collects that handler's ack. The earlier reply is still read afterwards (ioredis's
// disconnect half-closes the socket), and used to report the ids collected after it was sent as
// acked by it: a zombie's handling, whose own ack Redis refused, counted as acked while the owner
// still had the shard (the chaos suite's "two members at once", 145 and 123 in CI).
describe("ShardReader (ordering 'key'): an ack reports the ids it carried", () => {
  const { prefix, redis } = useRedisPrefix('ack-reports');
  const newReader = useReaders();

  /**
   * x (key A) is held in its handler, y (key B) handled at once; once the read turn that acks y
   * alone is sent, before its reply is read: x settles and the reader stops (and, with
   * `fenceMoves`, the shard's fence moves to another member first, as when the coordinator
   * expired a frozen member). Returns the acked reports, x's end time, the ids.
   */
  async function stopWithAckUnanswered(fenceMoves: boolean, holdReply = false) {
    const shard = testShard(prefix, 'orders', fenceMoves ? 1 : 0);
    await grant(redis(), shard, 'g', 'm');
    const x = (await redis().xadd(shard.key, '*', 'key', 'A', 'payload', '{"seq":0}')) as string;
    const y = (await redis().xadd(shard.key, '*', 'key', 'B', 'payload', '{"seq":1}')) as string;
    const releaseX = deferred();
    let xEndedAt = Number.POSITIVE_INFINITY;
    const reports: Array<{ ids: string[]; sentAt: number }> = [];
    let stopped: Promise<void> | undefined;
    let armed = true;
    let held: { socket: { resume(): void }; sentAt: number } | undefined;
    const reader: ShardReader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      ordering: 'key',
      maxConcurrency: 4,
      maxAckDelayMs: 20,
      hooks: { acked: (ids, sentAt) => reports.push({ ids: [...ids], sentAt }) },
      createConnection: () => {
        const connection = createRedisConnection(redisUrl(), 'reader');
        const sender = connection as unknown as {
          sendCommand(command: Command, stream?: unknown): unknown;
          stream: { pause(): void; resume(): void };
        };
        const send = sender.sendCommand.bind(connection);
        sender.sendCommand = (command, stream) => {
          const result = send(command, stream);
          if (armed && acksExactly(command, [y])) {
            armed = false;
            if (holdReply) {
              // its reply is read only after the stop's final ack was answered
              sender.stream.pause();
              held = { socket: sender.stream, sentAt: performance.now() };
            }
            // what a frozen process does first on waking, before its sockets are read
            queueMicrotask(() => {
              // (sent now, on the test's own connection: ahead of the stop's final ack, which
              // needs a new reader connection)
              if (fenceMoves) void redis().hset(shard.meta, 'owner:g', '2:other');
              releaseX.resolve();
              stopped = reader.stop();
            });
          }
          return result;
        };
        return connection;
      },
      handle: async (message) => {
        if (message.id !== x) return;
        await releaseX.promise;
        xEndedAt = performance.now();
      },
    });
    reader.start();
    await expect.poll(() => stopped !== undefined, { timeout: 10_000 }).toBe(true);
    await stopped;
    return { reports, xEndedAt: () => xEndedAt, x, y, shard, held };
  }

  it('a stop while a sent ack is unanswered reports a later-settled entry only with its own ack', async () => {
    const { reports, xEndedAt, x, y, shard } = await stopWithAckUnanswered(false);
    await expect
      .poll(() => [...new Set(reports.flatMap((r) => r.ids))].sort(), { timeout: 5_000 })
      .toEqual([x, y].sort());
    // (y may come twice: the stop's final ack carried it again)
    for (const report of reports) {
      if (report.ids.includes(x)) expect(report.sentAt).toBeGreaterThanOrEqual(xEndedAt());
    }
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
  });

  it('a reply read after the final ack was answered still reports its ids with its send time', async () => {
    const { reports, xEndedAt, x, y, shard, held } = await stopWithAckUnanswered(false, true);
    const { socket, sentAt } = held as NonNullable<typeof held>;
    expect(reports.some((r) => r.ids.includes(y) && r.sentAt <= sentAt)).toBe(false);
    socket.resume();
    // (the final ack carried y again with x, so without this report y's only one would have a
    // send time after Redis applied its ack)
    await expect
      .poll(() => reports.some((r) => r.ids.includes(y) && r.sentAt <= sentAt), { timeout: 5_000 })
      .toBe(true);
    for (const report of reports) {
      if (report.ids.includes(x)) expect(report.sentAt).toBeGreaterThanOrEqual(xEndedAt());
    }
    expect(await pending(redis(), shard.key, 'g')).toEqual([]);
  });

  it("a zombie's entry whose final ack Redis refused is not reported acked by the earlier reply", async () => {
    const { reports, x, y, shard } = await stopWithAckUnanswered(true);
    await expect.poll(() => reports.flatMap((r) => r.ids), { timeout: 5_000 }).toEqual([y]);
    const left = await pending(redis(), shard.key, 'g');
    expect(left.map(([id, consumer]) => [id, consumer])).toEqual([[x, 'm']]);
  });
});

// The same bookkeeping without key order: a read turn (ack + blocking read) whose reply is not read
// in time makes the watchdog give the connection up, and the claim phase hands the entries that
// read delivered over again on a new connection. The abandoned turn's reply can still be read
// after that (the dropped socket is only half-closed), while the claim phase's handled entries wait
// for their ack: that reply carried no ids, so it reports none and the entries keep their own ack.
// (The old code reported and forgot every id listed when the reply came: an id handled after the
// send reported acked before its handler ended, and never acked, pending until the shard moved.)
describe.each([false, true])(
  "ShardReader (ordering 'shard', batch %s): a read turn answered after the watchdog gave up",
  (batched) => {
    const { prefix, redis } = useRedisPrefix(`late-turn-${batched ? 'batch' : 'one'}`);
    const newReader = useReaders();

    it('reports no id it did not carry; the claimed entries are acked by their own ack', async () => {
      const shard = testShard(prefix);
      await grant(redis(), shard, 'g', 'm');
      const first = (await redis().xadd(
        shard.key,
        '*',
        'key',
        'A',
        'payload',
        '{"seq":0}',
      )) as string;
      const second = (await redis().xadd(
        shard.key,
        '*',
        'key',
        'B',
        'payload',
        '{"seq":1}',
      )) as string;
      const reports: Array<{ ids: string[]; sentAt: number }> = [];
      const endedAt = new Map<string, number>();
      let watchdogFired = 0;
      let held: { socket: { resume(): void }; read: Promise<unknown> } | undefined;
      let lateReplyRead = false;
      const handled = async (id: string): Promise<void> => {
        if (id === second && held !== undefined && !lateReplyRead) {
          // the abandoned turn's reply is read now, between the claim phase's two handlings
          const { socket, read } = held;
          socket.resume();
          await read.then(
            () => undefined,
            () => undefined,
          );
          await new Promise((resolve) => setImmediate(resolve));
          lateReplyRead = true;
        }
        endedAt.set(id, performance.now());
      };
      newReader({
        shard,
        group: 'g',
        memberId: 'm',
        ordering: 'shard',
        blockMs: 100,
        watchdogGraceMs: 200,
        maxAckDelayMs: 10_000, // handled entries wait for the next read turn's ack
        ...(batched
          ? {
              batch: { maxSize: 1 },
              handleBatch: async (messages) => {
                for (const message of messages) await handled(message.id);
              },
            }
          : {}),
        hooks: {
          acked: (ids, sentAt) => reports.push({ ids: [...ids], sentAt }),
          watchdog: () => watchdogFired++,
        },
        createConnection: () => {
          const connection = createRedisConnection(redisUrl(), 'reader');
          const sender = connection as unknown as {
            sendCommand(command: Command, stream?: unknown): unknown;
            stream: { pause(): void; resume(): void };
          };
          const send = sender.sendCommand.bind(connection);
          sender.sendCommand = (command, stream) => {
            const result = send(command, stream);
            if (held === undefined && command.name === 'xreadgroup') {
              // the first read turn delivers both entries; its replies stay unread for now
              sender.stream.pause();
              held = { socket: sender.stream, read: command.promise };
            }
            return result;
          };
          return connection;
        },
        handle: (message) => handled(message.id),
      }).start();

      await expect
        .poll(() => [...new Set(reports.flatMap((r) => r.ids))].sort(), { timeout: 10_000 })
        .toEqual([first, second].sort());
      expect(lateReplyRead).toBe(true);
      expect(watchdogFired).toBeGreaterThanOrEqual(1);
      for (const report of reports) {
        for (const id of report.ids) {
          expect(
            report.sentAt,
            `${id} reported acked by a call sent before it was handled`,
          ).toBeGreaterThanOrEqual(endedAt.get(id) ?? Number.POSITIVE_INFINITY);
        }
      }
      await expect.poll(() => pending(redis(), shard.key, 'g'), { timeout: 5_000 }).toEqual([]);
    });
  },
);

// An ack sent alone (`maxAckDelayMs: 0`: right after the handler) whose reply is not read in
// time: the watchdog gives the call up, yet Redis applied it. Its reply, read late on the dropped
// connection, still reports the id with the ack's own send time (a later resend of the same id
// is a no-op in Redis: its send time says nothing about when the entry was acked). Also when the
// reader lost the shard meanwhile (the fence moved after Redis applied the ack).
describe("ShardReader (ordering 'shard'): an ack answered after the watchdog gave it up", () => {
  const { prefix, redis } = useRedisPrefix('late-flush');
  const newReader = useReaders();

  it.each([false, true])(
    'reports the id with its own send time (the shard lost meanwhile: %s)',
    async (fenceMoves) => {
      const shard = testShard(prefix, 'orders', fenceMoves ? 1 : 0);
      await grant(redis(), shard, 'g', 'm');
      const id = (await redis().xadd(shard.key, '*', 'key', 'A', 'payload', '{"seq":0}')) as string;
      const reports: Array<{ ids: string[]; sentAt: number }> = [];
      let held: { socket: { resume(): void }; sentAt: number } | undefined;
      const watchdog = deferred();
      const lost = deferred();
      newReader({
        shard,
        group: 'g',
        memberId: 'm',
        ordering: 'shard',
        blockMs: 100,
        watchdogGraceMs: 200,
        maxAckDelayMs: 0,
        hooks: {
          acked: (ids, sentAt) => reports.push({ ids: [...ids], sentAt }),
          watchdog: () => watchdog.resolve(),
        },
        onLost: () => lost.resolve(),
        createConnection: () => {
          const connection = createRedisConnection(redisUrl(), 'reader');
          const sender = connection as unknown as {
            sendCommand(command: Command, stream?: unknown): unknown;
            stream: { pause(): void; resume(): void };
          };
          const send = sender.sendCommand.bind(connection);
          sender.sendCommand = (command, stream) => {
            const result = send(command, stream);
            if (held === undefined && acksExactly(command, [id])) {
              sender.stream.pause(); // Redis applies the ack; its reply stays unread for now
              held = { socket: sender.stream, sentAt: performance.now() };
            }
            return result;
          };
          return connection;
        },
        handle: () => undefined,
      }).start();

      await watchdog.promise;
      expect(await pending(redis(), shard.key, 'g')).toEqual([]); // applied
      if (fenceMoves) {
        await redis().hset(shard.meta, 'owner:g', '2:other');
        await lost.promise; // the reader's next fenced call was refused
      }
      const { socket, sentAt } = held as NonNullable<typeof held>;
      socket.resume();
      await expect
        .poll(() => reports.some((r) => r.ids.includes(id) && r.sentAt <= sentAt), {
          timeout: 5_000,
        })
        .toBe(true);
      expect(reports.flatMap((r) => r.ids).every((reported) => reported === id)).toBe(true);
    },
  );
});
