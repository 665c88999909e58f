import { cpuUs, preciseNow } from '../support/stats.js';
import { env, intEnv, ipc } from './worker-ipc.js';
import { connectRedis } from '../../test/support/redis-client.js';

/**
 * The baseline: a hand-written ioredis consumer, one dedicated connection and one loop per shard
 * key: `XREADGROUP GROUP g c COUNT n BLOCK 1000 STREAMS key >`, a no-op "handler" per entry, then
 * one `XACK` for the batch, over RESP2 (as the library's readers). No fencing, no ownership, no
 * retries. Same IPC commands as the member app (`arm`, `go`, `status`, `latency-reset`,
 * `latency-report`); for latency it parses the JSON
 * payload the library's publisher wrote (field `payload`) to read `t`.
 * Environment: REDIS_URL, SHARD_KEYS (comma-separated), GROUP, BATCH_SIZE.
 */
const keys = env('SHARD_KEYS').split(',');
const group = env('GROUP');
const count = intEnv('BATCH_SIZE', 100);
const consumer = `raw-${process.pid}`;

let handled = 0;
let firstAt = 0;
let lastAt = 0;
let waiting = 0;
let recordLatency = false;
let latencies: number[] = [];
let gate: Promise<void> | null = null;
let open: (() => void) | null = null;

type Reply = Array<[string, Array<[string, string[]]>]> | null;

async function loop(key: string, onReady: () => void): Promise<void> {
  // RESP2, like the library's reader connections: ioredis 6 defaults to RESP3, whose replies it
  // decodes much more slowly; the baseline gets the faster protocol too
  const c = connectRedis(env('REDIS_URL'), { maxRetriesPerRequest: null, protocol: 2 });
  await c.xgroup('CREATE', key, group, '0', 'MKSTREAM').catch((error: unknown) => {
    if (!String(error).includes('BUSYGROUP')) throw error;
  });
  onReady();
  for (;;) {
    const reply = (await c.xreadgroup(
      'GROUP',
      group,
      consumer,
      'COUNT',
      count,
      'BLOCK',
      1000,
      'STREAMS',
      key,
      '>',
    )) as Reply;
    if (reply === null) continue;
    const entries = reply[0]?.[1] ?? [];
    if (entries.length === 0) continue;
    if (gate !== null) {
      waiting++;
      await gate;
      waiting--;
    }
    const ids: string[] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as [string, string[]];
      // the no-op handler
      const now = preciseNow();
      if (handled === 0) firstAt = now;
      handled++;
      lastAt = now;
      if (recordLatency) {
        const fields = entry[1];
        const at = fields.indexOf('payload');
        const payload = at >= 0 ? (JSON.parse(fields[at + 1] as string) as { t?: number }) : {};
        if (typeof payload.t === 'number') latencies.push(now - payload.t);
      }
      ids.push(entry[0]);
    }
    await c.xack(key, group, ...ids);
  }
}

ipc.onCommand((command) => {
  switch (command.type) {
    case 'arm':
      handled = 0;
      firstAt = 0;
      lastAt = 0;
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
        held: keys.length,
        rssKb: Math.round(process.memoryUsage().rss / 1024),
        cpuUs: cpuUs(),
      });
      break;
    case 'latency-reset':
      latencies = [];
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
