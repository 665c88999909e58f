import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { StreamCoordinatorModule, StreamShardHandler } from '@redis-stream-coordinator/nestjs';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorProcess, TEST_TOKENS } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { startTcpProxy, type TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

/**
 * A joining member must be subscribed to the nudge channel before its join heartbeat: the nudge
 * that announces the shards released for it comes right after the join, and a member not yet
 * listening would wait for its next regular heartbeat (here 20 s) instead. The joiner reaches
 * Redis through a proxy adding 150 ms each way, so its subscription takes long enough to lose that
 * race every time unless the join waits for it.
 */
describe('member runtime: join hand-off does not wait for the heartbeat interval', () => {
  const redis = useRedisPrefix('join-handoff');
  let coordinator: CoordinatorProcess;
  let slowRedis: TcpProxy;

  @Injectable()
  class OrdersHandler {
    @StreamShardHandler('orders')
    async handle(): Promise<void> {}
  }

  const app = async (redis: string = redisUrl()): Promise<TestingModule> => {
    @Module({
      imports: [
        StreamCoordinatorModule.forRoot({
          coordinatorUrl: coordinator.url,
          token: TEST_TOKENS.member,
          redis,
          group: 'handoff',
          metrics: false,
          logger: false,
        }),
      ],
      providers: [OrdersHandler],
    })
    class AppModule {}
    const module = await Test.createTestingModule({ imports: [AppModule] }).compile();
    await module.init();
    return module;
  };

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4', HEARTBEAT_INTERVAL_MS: '20000', SESSION_TIMEOUT_MS: '60000' },
    });
    slowRedis = await startTcpProxy(
      Number(new URL(redisUrl()).port || 6379),
      new URL(redisUrl()).hostname,
    );
    slowRedis.latencyMs = 150;
  });
  afterAll(async () => {
    await slowRedis?.close();
    await coordinator?.stop();
  });

  it('every joiner gets its shards from the current owner well within one interval', async () => {
    const first = await app();
    try {
      const owner = first.get(MemberRuntime);
      await waitFor(() => owner.status().held.length === 4, {
        timeoutMs: 15_000,
        intervalMs: 10,
        message: 'the first member to own all 4 shards',
      });
      for (let round = 0; round < 2; round++) {
        const second = await app(`redis://127.0.0.1:${slowRedis.port}`);
        try {
          const joiner = second.get(MemberRuntime);
          const ms = await waitFor(() => joiner.status().held.length === 2, {
            timeoutMs: 25_000,
            intervalMs: 10,
            message: `joiner ${round} to hold 2 shards`,
          });
          // a missed nudge would cost a whole 20 s interval
          expect(ms).toBeLessThan(10_000);
        } finally {
          await second.close();
        }
        await waitFor(() => owner.status().held.length === 4, {
          timeoutMs: 15_000,
          intervalMs: 10,
          message: 'the shards to come back',
        });
      }
    } finally {
      await first.close();
    }
  });
});
