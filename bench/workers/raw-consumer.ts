import { cpuUs, preciseNow } from '../support/stats.js';
import { connectRaw, RAW_CLIENTS, type RawClientName } from './raw-clients.js';
import { env, intEnv, ipc } from './worker-ipc.js';

/**
 * The baseline: a hand-written consumer, one dedicated connection and one loop per shard key:
 * `XREADGROUP GROUP g c COUNT n BLOCK 1000 STREAMS key >`, then per entry what the bench member's
 * handler does (decode the JSON payload, check the per-shard order of its sequence number `n`,
 * count), then one `XACK` for the batch. No fencing, no ownership, no retries. The client is
 * `RAW_CLIENT` (see `raw-clients.ts`; default `ioredis6`). Same IPC commands as the member app
 * (`arm`, `go`, `status`, `latency-reset`, `latency-report`).
 * Environment: REDIS_URL, SHARD_KEYS (comma-separated), GROUP, BATCH_SIZE, RAW_CLIENT.
 */
const keys = env('SHARD_KEYS').split(',');
const group = env('GROUP');
const count = intEnv('BATCH_SIZE', 100);
const client = (process.env.RAW_CLIENT ?? 'ioredis6') as RawClientName;
if (!RAW_CLIENTS.includes(client)) throw new Error(`raw-consumer: unknown RAW_CLIENT ${client}`);
const consumer = `raw-${process.pid}`;

let handled = 0;
let firstAt = 0;
let lastAt = 0;
let waiting = 0;
let outOfOrder = 0;
let recordLatency = false;
let latencies: number[] = [];
let gate: Promise<void> | null = null;
let open: (() => void) | null = null;
/** The last sequence number seen per shard key (reset on `arm`: every prefill starts at 0). */
const lastN = new Map<string, number>();

async function loop(key: string, onReady: () => void): Promise<void> {
  const c = await connectRaw(client, env('REDIS_URL'));
  await c.createGroup(key, group);
  onReady();
  for (;;) {
    const entries = await c.read(key, group, consumer, count, 1000);
    if (entries.length === 0) continue;
    if (gate !== null) {
      waiting++;
      await gate;
      waiting--;
    }
    const ids: string[] = [];
    let last = lastN.get(key) ?? -1;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as [string, string[]];
      const fields = entry[1];
      // the handler: decode the payload, check the shard's order, count
      let at = -1;
      for (let f = 0; f < fields.length; f += 2) {
        if (fields[f] === 'payload') {
          at = f + 1;
          break;
        }
      }
      const payload = JSON.parse(at >= 0 ? (fields[at] as string) : '{}') as {
        n?: number;
        t?: number;
      };
      const now = preciseNow();
      if (handled === 0) firstAt = now;
      handled++;
      lastAt = now;
      if (typeof payload.n === 'number') {
        if (payload.n <= last) outOfOrder++;
        last = payload.n;
      }
      if (recordLatency && typeof payload.t === 'number') latencies.push(now - payload.t);
      ids.push(entry[0]);
    }
    lastN.set(key, last);
    await c.ack(key, group, ids);
  }
}

ipc.onCommand((command) => {
  switch (command.type) {
    case 'arm':
      handled = 0;
      firstAt = 0;
      lastAt = 0;
      lastN.clear();
      if (gate === null) gate = new Promise((resolve) => (open = resolve));
      ipc.send({ type: 'armed' });
      break;
    case 'go':
      gate = null;
      open?.();
      open = null;
      ipc.send({ type: 'went', at: preciseNow() });
      break;
    case 'status':
      ipc.send({
        type: 'status',
        handled,
        firstAt,
        lastAt,
        waiting,
        outOfOrder,
        held: keys.length,
        rssKb: Math.round(process.memoryUsage.rss() / 1024),
        cpuUs: cpuUs(),
      });
      break;
    case 'latency-reset':
      latencies = [];
      lastN.clear();
      recordLatency = true;
      ipc.send({ type: 'latency-reset' });
      break;
    case 'latency-report':
      recordLatency = false;
      ipc.send({ type: 'latency', samples: latencies });
      latencies = [];
      break;
    default:
      ipc.fail(new Error(`raw-consumer: unknown command ${command.type}`));
  }
});

let ready = 0;
const loopReady = (): void => {
  ready++;
  if (ready === keys.length) ipc.send({ type: 'ready', pid: process.pid });
};
for (const key of keys) loop(key, loopReady).catch((error: unknown) => ipc.fail(error));
