import { join } from 'node:path';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { handledCount, readHandled } from '../../support/handled-records.js';
import { KeyedProducer } from '../../support/keyed-producer.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { createTempDir, type TempDir } from '../../support/temp-dir.js';
import { WorkerProcess } from '../../support/worker-process.js';
import { waitFor } from '../../support/wait.js';

// Issue 15 item 2, as deployed: the example worker (Fastify, enableShutdownHooks) holds its record
// file open in a provider that closes it in onModuleDestroy, as a database pool would be. SIGTERM
// mid-load: the library drains before that hook, so no handler ever writes to the closed file (a
// failure would be logged, retried, then dead-lettered), and a second worker handles whatever the
// first left pending. (MAX_DELIVERIES=2: an entry the first worker read but never handed to its
// handler still counts one delivery when the second claims it.)
describe('e2e: SIGTERM of a worker whose own provider closes a resource in onModuleDestroy', () => {
  const redis = useRedisPrefix('e2e-sigterm');
  let coordinator: CoordinatorProcess;
  let routing: StreamRouting;
  const workers: WorkerProcess[] = [];
  let producer: KeyedProducer;
  let dir: TempDir;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '500', SESSION_TIMEOUT_MS: '4000' },
    });
    routing = (await new CoordinatorApi(coordinator.url).get<StreamRouting>('/v1/streams/orders'))
      .body;
    producer = new KeyedProducer({
      redisUrl: redisUrl(),
      coordinatorUrl: coordinator.url,
      stream: 'orders',
    });
    dir = createTempDir('sigterm');
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.kill()));
    producer?.close();
    dir?.remove();
    await coordinator?.stop();
  });

  const start = async (name: string, delayMs: number): Promise<WorkerProcess> => {
    const worker = await WorkerProcess.start({
      coordinatorUrl: coordinator.url,
      group: 'sigterm',
      recordFile: join(dir.path, `${name}.jsonl`),
      env: {
        MEMBER_ID: name,
        HANDLER_DELAY_MS: String(delayMs),
        MAX_DELIVERIES: '2',
        BATCH_SIZE: '20',
        SHUTDOWN_TIMEOUT_MS: '10000',
        // the worker's own teardown takes a while after the file is closed: handlers still
        // running then would fail on it (and, past MAX_DELIVERIES, be dead-lettered)
        TEARDOWN_DELAY_MS: '1500',
      },
    });
    workers.push(worker);
    return worker;
  };

  it('nothing dead-lettered, nothing lost', async () => {
    const first = await start('first', 100);
    const files = [join(dir.path, 'first.jsonl'), join(dir.path, 'second.jsonl')];
    await waitFor(async () => (await first.status()).shards.length === 4, {
      timeoutMs: 15_000,
      intervalMs: 20,
      message: 'the worker to own all shards',
    });
    const total = 400;
    const producing = producer.produce({ total, keys: 40, ratePerSecond: Infinity });
    // mid-load: handlers run on every shard, most messages still to come
    await waitFor(() => handledCount(files) >= 20, {
      timeoutMs: 20_000,
      intervalMs: 20,
      message: 'the first 20 messages',
    });
    const code = await first.stop('SIGTERM', 20_000);
    expect(first.output()).not.toMatch(/handler failed|dead-lettered|closed \(shutting down\)/);
    expect(code === 0 || code === null || code === 143).toBe(true);
    expect(await redis.redis().xlen(routing.deadLetterKey)).toBe(0);
    await producing;

    await start('second', 0);
    await waitFor(() => handledCount(files) === total, {
      timeoutMs: 30_000,
      intervalMs: 20,
      message: () => `all ${total} messages handled (so far ${handledCount(files)})`,
    });
    expect(await redis.redis().xlen(routing.deadLetterKey)).toBe(0);
    expect(readHandled(files).filter((l) => l.m === 'first').length).toBeGreaterThan(0);
  });
});
