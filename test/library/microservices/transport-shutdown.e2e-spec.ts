import { Controller, Injectable, Module, type OnModuleDestroy } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { StreamShardContext, StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import {
  StreamCoordinatorClientProxy,
  StreamCoordinatorTransport,
} from '@redis-stream-coordinator/nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorProcess, TEST_TOKENS } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { CollectingLogger } from '../e2e/member-app.js';
import { waitFor } from '../../support/wait.js';

// Issue 15 item 2 for the microservice transport: a hybrid app closes its microservices after
// every provider's onModuleDestroy (dispose), as a signal with enableShutdownHooks() does for a
// standalone one. With transport.drainModule() imported, the handlers drain first.
describe('@nestjs/microservices transport: drains before the application tears its providers down', () => {
  const redis = useRedisPrefix('ms-shutdown');
  let coordinator: CoordinatorProcess;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'events:2', HEARTBEAT_INTERVAL_MS: '300' },
    });
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('no handler runs once the first user onModuleDestroy started', async () => {
    const options = {
      coordinatorUrl: coordinator.url,
      token: TEST_TOKENS.member,
      redis: redisUrl(),
      group: 'ms-drain',
    };
    const transport = new StreamCoordinatorTransport(options);
    const calls: Array<{ t0: number; t1: number; ok: boolean }> = [];
    let destroyAt = 0;

    @Injectable()
    class Database implements OnModuleDestroy {
      open = true;
      onModuleDestroy(): void {
        destroyAt = performance.now();
        this.open = false;
      }
    }

    @Controller()
    class EventsController {
      constructor(private readonly db: Database) {}
      @EventPattern<string>('events')
      async handle(
        @Payload() _message: StreamShardMessage<{ n: number }>,
        @Ctx() _context: StreamShardContext,
      ): Promise<void> {
        const t0 = performance.now();
        await new Promise((r) => setTimeout(r, 150));
        calls.push({ t0, t1: performance.now(), ok: this.db.open });
        if (!this.db.open) throw new Error('database closed');
      }
    }

    @Module({
      imports: [transport.drainModule()],
      controllers: [EventsController],
      providers: [Database],
    })
    class AppModule {}

    const app = await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false });
    app.connectMicroservice({ strategy: transport }, { inheritAppConfig: true });
    await app.startAllMicroservices();
    await app.init();
    const client = new StreamCoordinatorClientProxy(options);
    try {
      await client.connect();
      for (let n = 0; n < 30; n++)
        await lastValueFrom(client.emit('events', { key: `k${n % 6}`, value: { n } }));
      await waitFor(() => calls.length >= 3, {
        timeoutMs: 15_000,
        intervalMs: 20,
        message: 'the first handlers',
      });
    } finally {
      await client.close();
    }
    await app.close();
    expect(destroyAt).toBeGreaterThan(0);
    expect(calls.filter((c) => c.t1 > destroyAt)).toEqual([]);
    expect(calls.filter((c) => !c.ok)).toEqual([]);
  });

  // Without the import nothing can drain early: the user must be told, not find out from
  // dead-lettered messages after a SIGTERM.
  it.each([
    { imported: false, warns: 1 },
    { imported: true, warns: 0 },
  ])(
    'warns at listen when drainModule() is not imported ($imported)',
    async ({ imported, warns }) => {
      const logger = new CollectingLogger();
      const transport = new StreamCoordinatorTransport({
        coordinatorUrl: coordinator.url,
        token: TEST_TOKENS.member,
        redis: redisUrl(),
        group: `ms-warn-${String(imported)}`,
        logger,
      });
      @Controller()
      class EventsController {
        @EventPattern<string>('events')
        handle(): void {}
      }
      @Module({
        imports: imported ? [transport.drainModule()] : [],
        controllers: [EventsController],
      })
      class AppModule {}
      const app = await NestFactory.createMicroservice(AppModule, {
        strategy: transport,
        logger: false,
      });
      try {
        await app.listen();
      } finally {
        await app.close();
      }
      const lines = logger.lines.filter(
        (l) => l.level === 'warn' && l.message.includes('drainModule() is not imported'),
      );
      expect(lines).toHaveLength(warns);
    },
  );
});
