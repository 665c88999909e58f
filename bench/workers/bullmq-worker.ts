import { Queue, Worker } from 'bullmq';
import { cpuUs, preciseNow } from '../support/stats.js';
import { benchPayload } from './payload.js';
import { env, intEnv, ipc } from './worker-ipc.js';

/**
 * Peer: BullMQ, one Worker with `concurrency` 8 and a no-op processor; jobs are added with
 * `removeOnComplete` (the usual setting for a firehose). `prefill {count}` adds the jobs with
 * `addBulk`; `run {count}` starts the worker and answers `done` once `count` jobs completed.
 * Environment: REDIS_URL, QUEUE, CONCURRENCY.
 */
const queueName = env('QUEUE');
const concurrency = intEnv('CONCURRENCY', 8);

function connection(): { url: string; maxRetriesPerRequest: null } {
  return { url: env('REDIS_URL'), maxRetriesPerRequest: null };
}

ipc.onCommand(async (command) => {
  if (command.type === 'prefill') {
    const count = command.count as number;
    const queue = new Queue(queueName, { connection: connection() });
    for (let i = 0; i < count; i += 1000) {
      const jobs = [];
      for (let j = i; j < Math.min(count, i + 1000); j++) {
        jobs.push({ name: 'bench', data: benchPayload(j), opts: { removeOnComplete: true } });
      }
      await queue.addBulk(jobs);
    }
    await queue.close();
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
    const startAt = preciseNow();
    const cpuStart = cpuUs();
    const worker = new Worker(
      queueName,
      async () => {
        const now = preciseNow();
        if (handled === 0) firstAt = now;
        handled++;
      },
      { connection: connection(), concurrency },
    );
    let completed = 0;
    worker.on('completed', () => {
      completed++;
      lastAt = preciseNow();
      if (completed === count) finish();
    });
    await finished;
    const rssKb = Math.round(process.memoryUsage.rss() / 1024);
    const cpu = cpuUs() - cpuStart;
    await worker.close();
    ipc.send({ type: 'done', handled: completed, firstAt, lastAt, startAt, rssKb, cpuUs: cpu });
    return;
  }
  throw new Error(`bullmq-worker: unknown command ${command.type}`);
});

ipc.send({ type: 'ready', pid: process.pid });
