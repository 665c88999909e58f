import {
  JSON_PAYLOAD_SERIALIZER,
  MemberRuntimeEvents,
  type RawStreamEntry,
  ShardReader,
} from '@redis-stream-coordinator/nestjs/internal';
import { StreamShardContext, type StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import { cpuUs } from './support/stats.js';
import { benchPayload } from './workers/payload.js';

/**
 * The library's own per-message path, without Redis and without a client's reply decoder: a
 * `ShardReader`'s batch loop (decode the entry, the message object, the handler call with its
 * `StreamShardContext`, the outcome and the ack list) fed batches shaped as a client hands them
 * over (Buffers cut from one reply buffer, as both ioredis decoders do), with the bench's handler
 * (read `payload`, check the shard's order) and the runtime's reader hooks (a per-message
 * listener doing what the metrics module does). `raw` runs what the raw loop does per entry on the
 * same Buffers instead (id to string, find `payload`, `JSON.parse`, the order check, the id into
 * the ack list). CPU time (`process.cpuUsage`) of the batch calls only, batch building excluded.
 *
 * `node .tools/bench/reader-path-micro.js <ours|raw> [messages=300000] [batch=100]` (after
 * `npm run build`); one fresh process is one cold measurement: the first `messages` (cold), then
 * the same again (warm). With `BENCH_LIB_COPY=<dir>` and
 * `--import=./.tools/bench/workers/library-copy-preload.js` it runs an earlier build instead
 * (before/after a change, interleaved). `MICRO_WITHOUT=hooks,context` leaves the reader hooks or
 * the per-message `StreamShardContext` out (what each costs).
 */
const mode = process.argv[2] === 'raw' ? 'raw' : 'ours';
const messages = Number(process.argv[3] ?? 300_000);
const batch = Number(process.argv[4] ?? 100);
/** `MICRO_WITHOUT=hooks,context`: leave those out of `ours` (how much each costs). */
const WITHOUT = new Set((process.env.MICRO_WITHOUT ?? '').split(',').filter(Boolean));

/** One batch as a decoder returns it: ids and field values cut out of one reply buffer. */
function makeBatch(from: number): RawStreamEntry[] {
  const parts: string[] = [];
  for (let i = 0; i < batch; i++) {
    parts.push(
      `${1_700_000_000_000 + from + i}-0`,
      'key',
      `customer-${(from + i) % 1000}`,
      'payload',
      JSON.stringify(benchPayload(from + i)),
    );
  }
  const chunk = Buffer.from(parts.join(''));
  const entries: RawStreamEntry[] = [];
  let at = 0;
  const cut = (text: string): Buffer => {
    const length = Buffer.byteLength(text);
    const slice = chunk.subarray(at, at + length);
    at += length;
    return slice;
  };
  for (let i = 0; i < parts.length; i += 5) {
    const id = cut(parts[i] as string);
    entries.push([
      id,
      [
        cut(parts[i + 1] as string),
        cut(parts[i + 2] as string),
        cut(parts[i + 3] as string),
        cut(parts[i + 4] as string),
      ],
    ]);
  }
  return entries;
}

let handled = 0;
let outOfOrder = 0;
let last = -1;
/** The bench member's handler: decode the payload, check the order. */
function count(message: StreamShardMessage<{ n?: number }>): void {
  handled++;
  const n = message.payload?.n;
  if (typeof n === 'number') {
    if (n <= last) outOfOrder++;
    last = n;
  }
}

type BatchRun = (entries: RawStreamEntry[]) => Promise<void>;

/** Upper bounds of a handler-duration histogram (what the metrics listener does per message). */
const BOUNDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const buckets: number[] = Array.from({ length: BOUNDS.length + 1 }, () => 0);

function oursRun(): BatchRun {
  const signal = new AbortController().signal;
  // the runtime's reader hooks, with a per-message listener as the metrics module registers
  const events = new MemberRuntimeEvents();
  events.onHandled((_shard, durationMs) => {
    const value = durationMs / 1000;
    let i = 0;
    while (i < BOUNDS.length && value > (BOUNDS[i] as number)) i++;
    buckets[i] = (buckets[i] as number) + 1;
  });
  const reader = new ShardReader({
    createConnection: () => {
      throw new Error('reader-path-micro: no Redis');
    },
    group: 'g',
    memberId: 'm',
    stream: 's',
    shard: 0,
    key: 's:0',
    deadLetterKey: 's:dlq',
    // as the runtime's shard-reader pool: a context per message, then the direct invoke
    handle: WITHOUT.has('context')
      ? (message) => invokeDirect(message as StreamShardMessage<{ n?: number }>, undefined)
      : (message) => {
          const context = new StreamShardContext(message, 'g', 'm', signal);
          return invokeDirect(message as StreamShardMessage<{ n?: number }>, context);
        },
    maxAckDelayMs: 2 ** 31,
    serializer: JSON_PAYLOAD_SERIALIZER,
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    hooks: WITHOUT.has('hooks') ? {} : events.readerHooks({ stream: 's', shard: 0, key: 's:0' }),
    beforeHandle: () => undefined,
  });
  const inner = reader as unknown as {
    handleBatch(entries: readonly RawStreamEntry[], fill: boolean): Promise<void>;
    acks: string[];
  };
  return async (entries) => {
    await inner.handleBatch(entries, true);
    if (inner.acks.length !== entries.length) throw new Error('reader-path-micro: acks missing');
    inner.acks = [];
  };
}

function invokeDirect(
  message: StreamShardMessage<{ n?: number }>,
  _context: StreamShardContext | undefined,
): Promise<void> | undefined {
  count(message);
  return undefined;
}

function rawRun(): BatchRun {
  return async (entries) => {
    const ids: string[] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as RawStreamEntry;
      const fields = entry[1];
      let at = -1;
      for (let f = 0; f < fields.length; f += 2) {
        if ((fields[f] as Buffer).toString() === 'payload') {
          at = f + 1;
          break;
        }
      }
      const payload = JSON.parse(at >= 0 ? (fields[at] as Buffer).toString() : '{}') as {
        n?: number;
      };
      handled++;
      if (typeof payload.n === 'number') {
        if (payload.n <= last) outOfOrder++;
        last = payload.n;
      }
      ids.push(entry[0].toString());
    }
    if (ids.length !== entries.length) throw new Error('unreachable');
  };
}

async function measure(run: BatchRun, from: number): Promise<number> {
  let cpu = 0;
  for (let n = from; n < from + messages; n += batch) {
    const entries = makeBatch(n);
    const before = cpuUs();
    await run(entries);
    cpu += cpuUs() - before;
  }
  return cpu / messages;
}

async function main(): Promise<void> {
  const run = mode === 'raw' ? rawRun() : oursRun();
  const cold = await measure(run, 0);
  const warm = await measure(run, messages);
  if (handled !== 2 * messages || outOfOrder !== 0) {
    throw new Error(`reader-path-micro: handled ${handled}, out of order ${outOfOrder}`);
  }
  process.stdout.write(
    `${JSON.stringify({ mode, without: [...WITHOUT].join(','), copy: process.env.BENCH_LIB_COPY ?? null, messages, batch, coldUsPerMsg: +cold.toFixed(3), warmUsPerMsg: +warm.toFixed(3) })}\n`,
  );
}

void main().catch((error: unknown) => {
  process.stderr.write(
    `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
