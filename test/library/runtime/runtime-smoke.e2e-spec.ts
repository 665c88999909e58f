import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  type StreamShardMessage,
  StreamCoordinatorModule,
  StreamProducer,
  StreamShardHandler,
} from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';

describe('member runtime (smoke)', () => {
  const redis = useRedisPrefix('runtime-smoke');
  let coordinator: CoordinatorProcess;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '500', SESSION_TIMEOUT_MS: '3000' },
    });
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('handles every published message in per-key order and leaves on close', async () => {
    const seen: Array<{ key: string; seq: number; shard: number }> = [];

    @Injectable()
    class OrdersHandler {
      @StreamShardHandler('orders')
      async handle(message: StreamShardMessage<{ seq: number }>): Promise<void> {
        seen.push({ key: message.key, seq: message.payload.seq, shard: message.shard });
      }
    }

    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: coordinator.url,
          token: TEST_TOKENS.member,
          redis: redisUrl(),
          group: 'billing',
        }),
      ],
      providers: [OrdersHandler],
    })
    class AppModule {}

    const app = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await app.init();
    try {
      const runtime = app.get(MemberRuntime);
      await waitFor(() => runtime.status().held.length === 4, {
        timeoutMs: 10_000,
        intervalMs: 20,
        message: 'the member to own all 4 shards',
      });
      const producer = app.get(StreamProducer);
      for (let seq = 0; seq < 50; seq++) {
        for (const key of ['a', 'b', 'c', 'd', 'e']) await producer.publish('orders', key, { seq });
      }
      await waitFor(() => seen.length >= 250, {
        timeoutMs: 10_000,
        intervalMs: 20,
        message: '250 messages',
      });
      for (const key of ['a', 'b', 'c', 'd', 'e']) {
        const seqs = seen.filter((s) => s.key === key).map((s) => s.seq);
        expect(seqs).toEqual([...Array(50).keys()]);
      }
    } finally {
      await app.close();
    }
    const api = new CoordinatorApi(coordinator.url);
    const group = await api.get<{ members: unknown[] }>('/v1/groups/billing');
    expect(group.body.members).toEqual([]);
  });
});
