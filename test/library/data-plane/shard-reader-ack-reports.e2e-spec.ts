import type { Command, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ShardReader } from '../../../libs/stream-coordinator/src/data-plane/index.js';
import { encodeEntryIds } from '../../../libs/stream-coordinator/src/data-plane/scripts/entry-id-list.js';
import {
  createRedisConnection,
  type RedisConnection,
} from '../../../libs/stream-coordinator/src/redis/index.js';
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

/** The last entry id delivered to `group` on `key` (`XINFO GROUPS`). */
async function lastDelivered(redis: Redis, key: string, group: string): Promise<string> {
  const groups = (await redis.xinfo('GROUPS', key)) as unknown[][];
  for (const fields of groups) {
    const at = (name: string): unknown => fields[fields.indexOf(name) + 1];
    if (at('name') === group) return String(at('last-delivered-id'));
  }
  throw new Error(`no group ${group} on ${key}`);
}

/** A reply held unread on a paused socket (see {@link holdingConnection}). */
interface HeldReply {
  /** When the command was written (after the reader took its own send time). */
  readonly sentAt: number;
  /** Resumes the socket; resolves `read` once the held command's reply was read. */
  readonly release: () => Promise<'read' | 'failed'>;
}

/**
 * A reader connection that holds a reply: when `hold(command)` says so (once the connection is
 * ready, so the command is written now), the socket is paused right after the command is written.
 * Redis runs it; its reply and every later one on this socket stay unread until `release()`.
 * `sent` sees every command written. A dropped connection's socket is destroyed a minute later
 * instead of ioredis's 2 s (`disconnectTimeout`), so a held reply is still there to read however
 * slowly a loaded machine gets to the release.
 */
function holdingConnection(options: {
  hold?: (command: Command) => boolean;
  held?: (reply: HeldReply) => void;
  sent?: (command: Command) => void;
}): RedisConnection {
  const connection = createRedisConnection(redisUrl(), 'reader');
  const internals = connection as unknown as {
    status: Redis['status'];
    sendCommand(command: Command, stream?: unknown): unknown;
    stream: { pause(): void; resume(): void };
    connector: { disconnectTimeout: number };
  };
  internals.connector.disconnectTimeout = 60_000;
  const send = internals.sendCommand.bind(connection);
  internals.sendCommand = (command, stream) => {
    const result = send(command, stream);
    if (internals.status === 'ready' && options.hold?.(command)) {
      const socket = internals.stream;
      socket.pause();
      const reply = command.promise.then(
        () => 'read' as const,
        () => 'failed' as const,
      );
      options.held?.({
        sentAt: performance.now(),
        release: () => {
          socket.resume();
          return reply;
        },
      });
    }
    options.sent?.(command);
    return result;
  };
  return connection;
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
    let held: HeldReply | undefined;
    const reader: ShardReader = newReader({
      shard,
      group: 'g',
      memberId: 'm',
      ordering: 'key',
      maxConcurrency: 4,
      maxAckDelayMs: 20,
      hooks: { acked: (ids, sentAt) => reports.push({ ids: [...ids], sentAt }) },
      createConnection: () =>
        holdingConnection({
          // (its reply is read only after the stop's final ack was answered)
          hold: (command) => holdReply && armed && acksExactly(command, [y]),
          held: (reply) => {
            held = reply;
          },
          sent: (command) => {
            if (!armed || !acksExactly(command, [y])) return;
            armed = false;
            // what a frozen process does first on waking, before its sockets are read
            queueMicrotask(() => {
              // (sent now, on the test's own connection: ahead of the stop's final ack, which
              // needs a new reader connection)
              if (fenceMoves) void redis().hset(shard.meta, 'owner:g', '2:other');
              releaseX.resolve();
              stopped = reader.stop();
            });
          },
        }),
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
    const { sentAt, release } = held as HeldReply;
    expect(reports.some((r) => r.ids.includes(y) && r.sentAt <= sentAt)).toBe(false);
    expect(await release()).toBe('read');
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
      let held: HeldReply | undefined;
      let lateReply: 'read' | 'failed' | undefined;
      const handled = async (id: string): Promise<void> => {
        if (id === second && held !== undefined && lateReply === undefined) {
          // the abandoned turn's reply is read now, between the claim phase's two handlings
          lateReply = await held.release();
          await new Promise((resolve) => setImmediate(resolve)); // (the reader's continuation)
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
        hooks: { acked: (ids, sentAt) => reports.push({ ids: [...ids], sentAt }) },
        createConnection: () =>
          holdingConnection({
            // the first read turn delivers both entries; its replies stay unread for now
            hold: (command) => held === undefined && command.name === 'xreadgroup',
            held: (reply) => {
              held = reply;
            },
          }),
        handle: (message) => handled(message.id),
      }).start();

      await expect
        .poll(() => [...new Set(reports.flatMap((r) => r.ids))].sort(), { timeout: 10_000 })
        .toEqual([first, second].sort());
      expect(lateReply).toBe('read');
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
      let held: HeldReply | undefined;
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
          // (the held ack's watchdog: an earlier slow call may have fired it already)
          watchdog: () => {
            if (held !== undefined) watchdog.resolve();
          },
        },
        onLost: () => lost.resolve(),
        createConnection: () =>
          holdingConnection({
            // Redis applies the ack; its reply stays unread for now
            hold: (command) => held === undefined && acksExactly(command, [id]),
            held: (reply) => {
              held = reply;
            },
          }),
        handle: () => undefined,
      }).start();

      await watchdog.promise;
      // applied: delivered, and nothing pending
      expect(await lastDelivered(redis(), shard.key, 'g')).toBe(id);
      expect(await pending(redis(), shard.key, 'g')).toEqual([]);
      if (fenceMoves) {
        await redis().hset(shard.meta, 'owner:g', '2:other');
        await lost.promise; // the reader's next fenced call was refused
      }
      const { sentAt, release } = held as HeldReply;
      expect(await release()).toBe('read');
      await expect
        .poll(() => reports.some((r) => r.ids.includes(id) && r.sentAt <= sentAt), {
          timeout: 5_000,
        })
        .toBe(true);
    },
  );
});
