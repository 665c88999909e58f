import {
  type CallHandler,
  type CanActivate,
  type ExecutionContext,
  type NestInterceptor,
  UseGuards,
  UseInterceptors,
} from '@nestjs/common';
import { NonRetryableError, type StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import { map, type Observable } from 'rxjs';
import type { DescribedGroup, StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { type BatchApp, type BatchWork, startBatchApp } from './batch-app.js';

const STREAMS = [
  'sizes',
  'wait',
  'partial',
  'dead',
  'thrown',
  'enhanced',
  'wrapped',
  'nulled',
  'revoke',
];

/** A promise and its resolve function. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

// Issue 19 part 3: batch handlers get one shard's messages in order, up to maxSize per call;
// a partial failure retries the first failed message and everything after it (acked prefix
// only); what cannot be retried is dead-lettered; a revoke waits for the in-flight batch.
describe('e2e: batch handlers', () => {
  const redis = useRedisPrefix('e2e-batch');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  const apps: BatchApp[] = [];

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: STREAMS.map((s) => `${s}:${s === 'revoke' ? 2 : 1}`).join(','),
        HEARTBEAT_INTERVAL_MS: '300',
      },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.app.close()));
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  const start = async (
    stream: string,
    memberId: string,
    work: BatchWork | undefined,
    extra: Partial<Parameters<typeof startBatchApp>[0]> = {},
  ): Promise<BatchApp> => {
    const app = await startBatchApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group: `g-${stream}`,
      memberId,
      stream,
      ...(work === undefined ? {} : { work }),
      ...extra,
    });
    apps.push(app);
    return app;
  };

  /** Publishes `count` messages on `stream` through a publish-only app; resolves their ids. */
  const publish = async (stream: string, count: number, key = 'k'): Promise<string[]> => {
    const producer = await start(stream, `p-${stream}`, undefined);
    const ids: string[] = [];
    for (let seq = 0; seq < count; seq++)
      ids.push(await producer.producer.publish(stream, key, { seq }));
    return ids;
  };

  const pendingOf = async (stream: string, shard = 0): Promise<number> => {
    const routing = (await api.get<StreamRouting>(`/v1/streams/${stream}`)).body;
    const key = routing.shards.find((s) => s.id === shard)?.key as string;
    const summary = (await redis.redis().xpending(key, `g-${stream}`)) as [number, ...unknown[]];
    return summary[0];
  };

  const deadLetters = async (stream: string): Promise<Array<Record<string, string>>> => {
    const routing = (await api.get<StreamRouting>(`/v1/streams/${stream}`)).body;
    const raw = await redis.redis().xrange(routing.deadLetterKey, '-', '+');
    return raw.map(([, fields]) => {
      const record: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2)
        record[fields[i] as string] = fields[i + 1] as string;
      return record;
    });
  };

  const handledSeqs = (app: BatchApp): number[] => app.calls.flatMap((c) => c.seqs);

  it('hands over batches of at most maxSize, in entry order', async () => {
    const ids = await publish('sizes', 25);
    const app = await start('sizes', 'm1', async () => undefined, {
      batch: { maxSize: 10 },
    });
    await waitFor(() => handledSeqs(app).length >= 25, {
      timeoutMs: 15_000,
      message: () => `25 messages handled (calls: ${JSON.stringify(app.calls.map((c) => c.seqs))})`,
    });
    expect(app.calls.map((c) => c.ids.length)).toEqual([10, 10, 5]);
    expect(app.calls.flatMap((c) => c.ids)).toEqual(ids);
    await waitFor(async () => (await pendingOf('sizes')) === 0, {
      timeoutMs: 10_000,
      message: 'every message acked',
    });
  });

  it('waits up to maxWaitMs for more messages after the first', async () => {
    const app = await start('wait', 'm1', async () => undefined, {
      batch: { maxSize: 5, maxWaitMs: 3000 },
    });
    await waitFor(() => app.runtime.status().held.length === 1, {
      timeoutMs: 15_000,
      message: 'the shard granted',
    });
    const producer = await start('wait', 'p', undefined);
    for (let seq = 0; seq < 5; seq++) {
      await producer.producer.publish('wait', 'k', { seq });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await waitFor(() => handledSeqs(app).length >= 5, {
      timeoutMs: 10_000,
      message: 'five messages handled',
    });
    expect(app.calls.map((c) => c.seqs)).toEqual([[0, 1, 2, 3, 4]]);
  });

  it('retries only the first failed message and those after it, in order', async () => {
    await publish('partial', 10);
    const app = await start('partial', 'm1', async (messages, _context, call) =>
      call === 0
        ? { batchItemFailures: [{ itemIdentifier: messages[3]?.id as string }] }
        : undefined,
    );
    await waitFor(() => app.calls.length >= 2, {
      timeoutMs: 15_000,
      message: 'the retry call',
    });
    expect(app.calls[0]?.seqs).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(app.calls[1]?.seqs).toEqual([3, 4, 5, 6, 7, 8, 9]);
    expect(app.calls[1]?.deliveryCounts).toEqual([2, 2, 2, 2, 2, 2, 2]);
    await waitFor(async () => (await pendingOf('partial')) === 0, {
      timeoutMs: 10_000,
      message: 'every message acked',
    });
    expect(app.calls).toHaveLength(2);
    expect(await deadLetters('partial')).toEqual([]);
  });

  it('dead-letters what cannot be retried and acks the messages after it', async () => {
    const ids = await publish('dead', 5);
    const app = await start(
      'dead',
      'm1',
      async (messages) => ({
        batchItemFailures: messages.flatMap((m) => {
          if (m.payload.seq === 2) return [{ itemIdentifier: m.id, error: new Error('poison') }];
          if (m.payload.seq === 4 && m.deliveryCount > 1)
            return [{ itemIdentifier: m.id, error: new NonRetryableError('never') }];
          return [];
        }),
      }),
      { handler: { maxDeliveries: 2, retry: { initialDelayMs: 10, maxDelayMs: 10 } } },
    );
    await waitFor(async () => (await deadLetters('dead')).length === 2, {
      timeoutMs: 15_000,
      message: 'two dead letters',
    });
    expect(app.calls.map((c) => c.seqs)).toEqual([
      [0, 1, 2, 3, 4],
      [2, 3, 4],
    ]);
    const dead = await deadLetters('dead');
    expect(dead.map((d) => [d.id, d.reason, d.deliveryCount])).toEqual([
      [ids[2], 'max-deliveries', '2'],
      [ids[4], 'non-retryable', '2'],
    ]);
    expect(dead[0]?.error).toContain('poison');
    await waitFor(async () => (await pendingOf('dead')) === 0, {
      timeoutMs: 10_000,
      message: 'every message acked',
    });
  });

  it('a thrown batch retries the whole batch with backoff', async () => {
    await publish('thrown', 4);
    const app = await start('thrown', 'm1', async (_messages, _context, call) => {
      if (call === 0) throw new Error('database down');
    });
    await waitFor(async () => app.calls.length >= 2 && (await pendingOf('thrown')) === 0, {
      timeoutMs: 15_000,
      message: 'the retried batch acked',
    });
    expect(app.calls.map((c) => c.seqs)).toEqual([
      [0, 1, 2, 3],
      [0, 1, 2, 3],
    ]);
    expect(app.calls[1]?.deliveryCounts).toEqual([2, 2, 2, 2]);
    expect(app.logger.lines.some((l) => l.message.includes('database down'))).toBe(true);
  });

  it('guards and interceptors run once per batch call and see the array', async () => {
    await publish('enhanced', 5);
    const seen: unknown[] = [];
    class RecordingGuard implements CanActivate {
      canActivate(context: ExecutionContext): boolean {
        seen.push(context.switchToRpc().getData());
        return true;
      }
    }
    let mapped = false;
    // reports the third message failed on the first call: what the chain returns is the result
    class FailOnceInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
        const data = context.switchToRpc().getData() as StreamShardMessage[];
        return next.handle().pipe(
          map((value: unknown) => {
            if (mapped) return value;
            mapped = true;
            return { batchItemFailures: [{ itemIdentifier: data[2]?.id }] };
          }),
        );
      }
    }
    const app = await start('enhanced', 'm1', async () => undefined, {
      enhance: [UseGuards(RecordingGuard), UseInterceptors(FailOnceInterceptor)],
    });
    await waitFor(async () => app.calls.length >= 2 && (await pendingOf('enhanced')) === 0, {
      timeoutMs: 15_000,
      message: () =>
        `the retried suffix acked (calls ${JSON.stringify(app.calls.map((c) => c.seqs))})`,
    });
    expect(app.calls.map((c) => c.seqs)).toEqual([
      [0, 1, 2, 3, 4],
      [2, 3, 4],
    ]);
    expect(seen.map((data) => (Array.isArray(data) ? data.length : -1))).toEqual([5, 3]);
  });

  // Review finding A: a response wrapper (`map(data => ({ data }))`) or a fallback that maps
  // the result away must not hide the failures the method itself reported: acking a failure.
  it.each([
    ['wrapped', (value: unknown) => ({ data: value })],
    ['nulled', () => null],
  ] as const)(
    'failures the method reported are retried when an interceptor maps its result (%s)',
    async (stream, reshape) => {
      await publish(stream, 5);
      class ReshapingInterceptor implements NestInterceptor {
        intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
          return next.handle().pipe(map(reshape));
        }
      }
      const app = await start(
        stream,
        'm1',
        async (messages, _context, call) =>
          call === 0
            ? { batchItemFailures: [{ itemIdentifier: messages[2]?.id as string }] }
            : undefined,
        { enhance: [UseInterceptors(ReshapingInterceptor)] },
      );
      await waitFor(async () => app.calls.length >= 2 && (await pendingOf(stream)) === 0, {
        timeoutMs: 15_000,
        message: () =>
          `the failed message retried (calls ${JSON.stringify(app.calls.map((c) => c.seqs))})`,
      });
      expect(app.calls.map((c) => c.seqs)).toEqual([
        [0, 1, 2, 3, 4],
        [2, 3, 4],
      ]);
      expect(app.calls[1]?.deliveryCounts).toEqual([2, 2, 2]);
    },
  );

  it('a revoke waits for the in-flight batch, acks it, then hands the shard over', async () => {
    const release = gate();
    const first = await start(
      'revoke',
      'a',
      async (_messages, _context, call) => {
        if (call < 2) await release.promise;
      },
      { module: { rebalanceTimeoutMs: 30_000 } },
    );
    await waitFor(() => first.runtime.status().held.length === 2, {
      timeoutMs: 15_000,
      message: 'a holds both shards',
    });
    const producer = await start('revoke', 'p', undefined);
    const published: string[] = [];
    for (let seq = 0; seq < 40; seq++)
      published.push(await producer.producer.publish('revoke', `key-${seq % 8}`, { seq }));
    await waitFor(() => first.calls.length === 2, {
      timeoutMs: 10_000,
      message: 'a batch in flight on each shard',
    });
    const second = await start('revoke', 'b', async () => undefined);
    await waitFor(
      async () => {
        const group = await api.get<DescribedGroup>('/v1/groups/g-revoke');
        return group.status === 200 && group.body.members.some((m) => m.memberId === 'b');
      },
      { timeoutMs: 15_000, message: 'b joined the group' },
    );
    // a's batches are still running: b handles nothing of a shard a has not released
    expect(second.calls).toEqual([]);
    release.open();
    await waitFor(() => second.runtime.status().held.length === 1, {
      timeoutMs: 20_000,
      message: 'b owns one shard',
    });
    for (let seq = 40; seq < 60; seq++)
      published.push(await producer.producer.publish('revoke', `key-${seq % 8}`, { seq }));
    // (entry ids are per shard: a message is its shard and id)
    const all = () =>
      [...first.calls, ...second.calls].flatMap((c) => c.ids.map((id) => `${c.shard}/${id}`));
    await waitFor(() => new Set(all()).size === published.length, {
      timeoutMs: 20_000,
      message: () =>
        `all messages handled (${new Set(all()).size}/${published.length}): ${JSON.stringify([...first.calls, ...second.calls].map((c) => [c.memberId, c.shard, c.seqs]))}`,
    });
    // nothing a handled was redelivered to b: the in-flight batches were acked before release
    expect(all()).toHaveLength(published.length);
    const moved = second.runtime.status().held[0]?.shard;
    const lastOfA = first.calls.filter((c) => c.shard === moved).at(-1);
    const firstOfB = second.calls.find((c) => c.shard === moved);
    expect(lastOfA).toBeDefined();
    expect(firstOfB).toBeDefined();
    expect((firstOfB?.at ?? 0) > (lastOfA?.at ?? Infinity)).toBe(true);
  });
});
