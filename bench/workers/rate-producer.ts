import {
  CoordinatorClient,
  RoutingCache,
  StreamPublisher,
} from '@redis-stream-coordinator/nestjs/internal';
import { preciseNow, sleep } from '../support/stats.js';
import { benchPayload } from './payload.js';
import { env, ipc } from './worker-ipc.js';
import { connectRedis } from '../../test/support/redis-client.js';

/**
 * A paced producer: `produce {stream, rate, durationMs}` publishes `rate` messages per second
 * (one `publish` each, through the library's routed publisher, keys spread over every shard),
 * every payload carrying `t`, its publish time, until the duration ends or `stop` arrives; then
 * answers `produced {count, ms}`. Environment: COORDINATOR_URL, COORDINATOR_TOKEN, REDIS_URL.
 */
const connection = connectRedis(env('REDIS_URL'));
const routing = new RoutingCache(
  new CoordinatorClient({
    baseUrl: env('COORDINATOR_URL'),
    token: env('COORDINATOR_TOKEN'),
    requestTimeoutMs: 10_000,
  }),
);
const publisher = new StreamPublisher({ connection, routing });
let stopping = false;

async function produce(
  stream: string,
  rate: number,
  durationMs: number,
): Promise<{ count: number; ms: number; errors: number }> {
  await routing.get(stream);
  stopping = false;
  const start = performance.now();
  let sent = 0;
  let errors = 0;
  let inFlight = 0;
  while (!stopping) {
    const elapsed = performance.now() - start;
    if (elapsed >= durationMs) break;
    const due = Math.floor((elapsed * rate) / 1000);
    while (sent < due && inFlight < 2000) {
      const n = sent++;
      inFlight++;
      publisher
        .publish(stream, `k-${n % 4096}`, benchPayload(n, preciseNow()))
        .catch(() => void errors++)
        .finally(() => void inFlight--);
    }
    await sleep(1);
  }
  while (inFlight > 0) await sleep(1);
  return { count: sent, ms: performance.now() - start, errors };
}

ipc.onCommand(async (command) => {
  if (command.type === 'produce') {
    const result = await produce(
      command.stream as string,
      command.rate as number,
      command.durationMs as number,
    );
    ipc.send({ type: 'produced', ...result });
  } else if (command.type === 'stop') {
    stopping = true;
  } else {
    throw new Error(`rate-producer: unknown command ${command.type}`);
  }
});

ipc.send({ type: 'ready', pid: process.pid });
