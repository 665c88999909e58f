import ChannelsMiddleware from '@moleculer/channels';
import moleculer from 'moleculer';
import { cpuUs, preciseNow } from '../support/stats.js';
import { benchPayload } from './payload.js';
import { env, intEnv, ipc } from './worker-ipc.js';

/**
 * Peer: @moleculer/channels with its Redis Streams adapter (one consumer, `maxInFlight` 100, no
 * transporter). `prefill {count}` publishes with `broker.sendToChannel`; `run {count}` then
 * starts the consuming service (reading from the start of the stream) and answers `done` with
 * the first and last handler times once `count` messages were handled (and acked).
 * Environment: REDIS_URL, CHANNEL, MAX_IN_FLIGHT.
 */
const channel = env('CHANNEL');
const maxInFlight = intEnv('MAX_IN_FLIGHT', 100);

function newBroker(nodeID: string): moleculer.ServiceBroker {
  return new moleculer.ServiceBroker({
    nodeID,
    logger: false,
    middlewares: [
      ChannelsMiddleware.Middleware({
        adapter: { type: 'Redis', options: { redis: { url: env('REDIS_URL') } } },
      } as unknown as Parameters<
        typeof ChannelsMiddleware.Middleware
      >[0]) as unknown as moleculer.Middleware,
    ],
  });
}

ipc.onCommand(async (command) => {
  if (command.type === 'prefill') {
    const count = command.count as number;
    const producer = newBroker(`bench-producer-${process.pid}`);
    await producer.start();
    const send = producer as unknown as {
      sendToChannel(name: string, payload: unknown): Promise<void>;
    };
    for (let i = 0; i < count; i += 500) {
      const chunk: Array<Promise<void>> = [];
      for (let j = i; j < Math.min(count, i + 500); j++)
        chunk.push(send.sendToChannel(channel, benchPayload(j)));
      await Promise.all(chunk);
    }
    await producer.stop();
    ipc.send({ type: 'prefilled' });
    return;
  }
  if (command.type === 'run') {
    const count = command.count as number;
    let handled = 0;
    let firstAt = 0;
    let lastAt = 0;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const broker = newBroker(`bench-consumer-${process.pid}`);
    broker.createService({
      name: 'bench',
      channels: {
        [channel]: {
          group: 'bench',
          maxInFlight,
          redis: { startID: '0' },
          handler() {
            const now = preciseNow();
            if (handled === 0) firstAt = now;
            handled++;
            lastAt = now;
            if (handled === count) setImmediate(finish);
          },
        },
      },
    } as unknown as moleculer.ServiceSchema);
    const startAt = preciseNow();
    const cpuStart = cpuUs();
    await broker.start();
    await finished;
    // the last handler resolved; give its XACK the same chance as the others
    await new Promise((resolve) => setTimeout(resolve, 50));
    const rssKb = Math.round(process.memoryUsage.rss() / 1024);
    const cpu = cpuUs() - cpuStart;
    await broker.stop();
    ipc.send({ type: 'done', handled, firstAt, lastAt, startAt, rssKb, cpuUs: cpu });
    return;
  }
  throw new Error(`moleculer-consumer: unknown command ${command.type}`);
});

ipc.send({ type: 'ready', pid: process.pid });
