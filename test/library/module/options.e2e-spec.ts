import 'reflect-metadata';
import { Injectable, Logger, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { BAD_OPTIONS_CASES, optionsOf, VALID_OPTIONS } from './bad-options.cases.js';
import {
  InjectStreamCoordinatorOptions,
  InvalidModuleOptionsError,
  type ResolvedStreamCoordinatorOptions,
  STREAM_COORDINATOR_OPTIONS,
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamHandlerRegistry,
} from './library.js';

const modules: TestingModule[] = [];

async function compile(
  imports: NonNullable<Parameters<typeof Test.createTestingModule>[0]['imports']>,
  providers: Parameters<typeof Test.createTestingModule>[0]['providers'] = [],
) {
  const moduleRef = await Test.createTestingModule({ imports, providers }).compile();
  modules.push(moduleRef);
  return moduleRef;
}

async function bootError(run: () => Promise<unknown>): Promise<InvalidModuleOptionsError> {
  const error = await run().then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(InvalidModuleOptionsError);
  return error as InvalidModuleOptionsError;
}

afterEach(async () => {
  await Promise.all(modules.splice(0).map((moduleRef) => moduleRef.close()));
});

describe('StreamCoordinatorModule options', () => {
  describe.each(BAD_OPTIONS_CASES)('rejects $name', (testCase) => {
    it('with forRoot', async () => {
      const error = await bootError(() =>
        compile([StreamCoordinatorModule.forRoot(optionsOf(testCase))]),
      );
      expect(error.message).toBe(testCase.message);
      expect(error.optionPath).toBe(testCase.path);
      expect(error.name).toBe('InvalidModuleOptionsError');
    });

    it('with forRootAsync (useFactory), with the same message', async () => {
      const error = await bootError(() =>
        compile([
          StreamCoordinatorModule.forRootAsync({ useFactory: async () => optionsOf(testCase) }),
        ]),
      );
      expect(error.message).toBe(testCase.message);
      expect(error.optionPath).toBe(testCase.path);
    });
  });

  it('rejects an async factory that returns nothing', async () => {
    const error = await bootError(() =>
      compile([
        StreamCoordinatorModule.forRootAsync({
          useFactory: () => undefined as unknown as StreamCoordinatorModuleOptions,
        }),
      ]),
    );
    expect(error.message).toBe(
      'StreamCoordinatorModule: options must be an object (got undefined); pass the options to forRoot(), or return them from the forRootAsync() factory',
    );
  });

  it('never puts the token into a message', async () => {
    const error = await bootError(() =>
      compile([
        StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS, token: 'top secret', group: '' }),
      ]),
    );
    expect(error.message).not.toContain('top secret');
    expect(error.issues.map((issue) => issue.path)).toEqual(['token', 'group']);
  });

  it('fills every default, on forRoot and forRootAsync alike', async () => {
    const sync = await compile([StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS })]);
    const async = await compile([
      StreamCoordinatorModule.forRootAsync({
        useFactory: () => ({ ...VALID_OPTIONS, memberId: 'fixed-member' }),
      }),
    ]);
    for (const moduleRef of [sync, async]) {
      const resolved = moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS);
      expect(resolved).toMatchObject({
        coordinatorUrl: 'http://127.0.0.1:7400',
        token: 'member-token',
        group: 'billing',
        rebalanceTimeoutMs: 60_000,
        shutdownTimeoutMs: 30_000,
        requestTimeoutMs: 5_000,
        publishOnly: 'auto',
        handlerFastPath: true,
        metrics: { registry: undefined, prefix: 'stream_coordinator_' },
        handlerDefaults: {
          concurrency: 16,
          batchSize: 100,
          blockMs: 2000,
          maxDeliveries: 5,
          retry: { initialDelayMs: 100, maxDelayMs: 5000, multiplier: 2 },
          deadLetter: true,
        },
      });
      expect(typeof resolved.serializer.serialize).toBe('function');
    }
    expect(
      sync.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).memberId,
    ).toMatchObject({
      kind: 'fixed',
      source: 'default',
    });
    expect(
      async.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).memberId,
    ).toEqual({
      kind: 'fixed',
      id: 'fixed-member',
      source: 'option',
    });
  });

  it('merges partial handlerDefaults over the library defaults', async () => {
    const moduleRef = await compile([
      StreamCoordinatorModule.forRoot({
        ...VALID_OPTIONS,
        handlerDefaults: { batchSize: 10, retry: { maxDelayMs: 1000 } },
        logger: true,
        metrics: false,
        memberId: 'coordinator',
      }),
    ]);
    const resolved = moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS);
    expect(resolved.handlerDefaults).toEqual({
      concurrency: 16,
      batchSize: 10,
      blockMs: 2000,
      maxDeliveries: 5,
      retry: { initialDelayMs: 100, maxDelayMs: 1000, multiplier: 2 },
      deadLetter: true,
      nonRetryable: [],
      ordering: 'shard',
      maxConcurrency: 16,
      maxBufferedEntries: 200,
      batch: undefined,
      startFrom: 'earliest',
    });
    expect(resolved.logger).toBeInstanceOf(Logger);
    expect(resolved.metrics).toBe(false);
    expect(resolved.memberId).toEqual({ kind: 'coordinator' });
  });

  it('calls a memberId function once, at bootstrap', async () => {
    let calls = 0;
    const moduleRef = await compile([
      StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS, memberId: () => `member-${++calls}` }),
    ]);
    const resolved = moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS);
    expect(resolved.memberId).toEqual({ kind: 'fixed', id: 'member-1', source: 'factory' });
    expect(calls).toBe(1);
  });

  it('accepts ioredis options and cluster node lists as given', async () => {
    const redisOptions = { host: '127.0.0.1', port: 6379, keyPrefix: 'ignored-by-validation' };
    const cluster = { cluster: [{ host: '10.0.0.1', port: 7000 }, '10.0.0.2:7001'] };
    for (const redis of [
      redisOptions,
      cluster,
      'rediss://user:pw@host:6380/0',
      'redis+cluster://h1:1,h2:2',
    ]) {
      const moduleRef = await compile([
        StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS, redis }),
      ]);
      expect(
        moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).redis,
      ).toBe(redis);
    }
  });

  it('accepts a prom-client Registry (type and value) and a metrics prefix', async () => {
    const registry = new Registry();
    const moduleRef = await compile([
      StreamCoordinatorModule.forRoot({
        ...VALID_OPTIONS,
        metrics: { registry, prefix: 'billing_' },
      }),
    ]);
    expect(
      moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).metrics,
    ).toEqual({
      registry,
      prefix: 'billing_',
      sampleIntervalMs: 5000,
    });
  });

  it('strips trailing slashes from coordinatorUrl', async () => {
    const moduleRef = await compile([
      StreamCoordinatorModule.forRoot({
        ...VALID_OPTIONS,
        coordinatorUrl: 'https://coordinator.internal/base//',
      }),
    ]);
    expect(
      moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).coordinatorUrl,
    ).toBe('https://coordinator.internal/base');
  });
});

@Injectable()
class NeedsOptions {
  constructor(
    @InjectStreamCoordinatorOptions() readonly options: ResolvedStreamCoordinatorOptions,
    readonly registry: StreamHandlerRegistry,
  ) {}
}

@Module({ providers: [NeedsOptions], exports: [NeedsOptions] })
class FeatureModule {}

describe('StreamCoordinatorModule globality (nestjs/nest#13372)', () => {
  it('is global by default with forRoot: a feature module injects the options and registry', async () => {
    const moduleRef = await compile([
      StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS }),
      FeatureModule,
    ]);
    const consumer = moduleRef.get(NeedsOptions);
    expect(consumer.options.group).toBe('billing');
    expect(consumer.registry).toBeInstanceOf(StreamHandlerRegistry);
  });

  it('is global by default with forRootAsync', async () => {
    const moduleRef = await compile([
      StreamCoordinatorModule.forRootAsync({ useFactory: () => ({ ...VALID_OPTIONS }) }),
      FeatureModule,
    ]);
    expect(moduleRef.get(NeedsOptions).options.group).toBe('billing');
  });

  it('honours isGlobal: false on forRootAsync (the extra reaches the async variant)', async () => {
    const definition = StreamCoordinatorModule.forRootAsync({
      isGlobal: false,
      useFactory: () => ({ ...VALID_OPTIONS }),
    });
    expect(definition.global).toBe(false);
    await expect(compile([definition, FeatureModule])).rejects.toThrow(/NeedsOptions/);
  });

  it('honours isGlobal: false on forRoot and keeps isGlobal out of the validated options', async () => {
    const definition = StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS, isGlobal: false });
    expect(definition.global).toBe(false);
    expect(StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS }).global).toBe(true);
    expect(
      StreamCoordinatorModule.forRootAsync({ useFactory: () => ({ ...VALID_OPTIONS }) }).global,
    ).toBe(true);
    // With the module imported directly, `isGlobal` must not be mistaken for an unknown option.
    const moduleRef = await compile([definition]);
    expect(moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).group).toBe(
      'billing',
    );
  });

  it('supports forRootAsync with inject and imports', async () => {
    const CONFIG = 'CONFIG';
    @Module({
      providers: [{ provide: CONFIG, useValue: { group: 'payments' } }],
      exports: [CONFIG],
    })
    class ConfigModule {}
    const moduleRef = await compile([
      StreamCoordinatorModule.forRootAsync({
        imports: [ConfigModule],
        inject: [CONFIG],
        useFactory: (config: { group: string }) => ({ ...VALID_OPTIONS, group: config.group }),
      }),
    ]);
    expect(moduleRef.get<ResolvedStreamCoordinatorOptions>(STREAM_COORDINATOR_OPTIONS).group).toBe(
      'payments',
    );
  });
});
