import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { UnsupportedBatchHandlerError } from '../errors/batch/unsupported-batch-handler.error.js';
import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import { ShardReaderOptionsError } from '../errors/data-plane/shard-reader-options.error.js';
import type { StreamShardHandlerOptions } from '../interfaces/stream-shard-handler-options.interface.js';
import { resolveShardReaderOptions } from '../data-plane/shard-reader.options.js';
import {
  collectModuleOptionIssues,
  mergeHandlerOptions,
} from '../options/stream-coordinator-options.validation.js';
import { STREAM_SHARD_HANDLER_DEFAULTS } from '../constants/stream-coordinator.constants.js';
import { ShardMessage } from './shard-message.decorator.js';
import { StreamShardHandler } from './stream-shard-handler.decorator.js';

const declare = (options: unknown): void => {
  class OrdersHandler {
    @StreamShardHandler('orders', options as StreamShardHandlerOptions)
    handle(): void {}
  }
  void OrdersHandler;
};

describe('batch option of @StreamShardHandler', () => {
  it.each([
    [{ maxSize: 0 }, 'batch.maxSize'],
    [{ maxSize: 1.5 }, 'batch.maxSize'],
    [{ maxSize: 10_001 }, 'batch.maxSize'],
    [{}, 'batch.maxSize'],
    [{ maxSize: 10, maxWaitMs: -1 }, 'batch.maxWaitMs'],
    [{ maxSize: 10, maxWaitMs: 60_001 }, 'batch.maxWaitMs'],
    [{ maxSize: 10, size: 3 }, 'batch'],
    [100, 'batch'],
  ])('refuses batch %j, naming %s', (batch, path) => {
    let error: unknown;
    try {
      declare({ batch });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(InvalidStreamHandlerError);
    expect((error as Error).message).toContain(path);
  });

  it('accepts a valid batch and resolves maxWaitMs to 0 by default', () => {
    expect(() => declare({ batch: { maxSize: 1 } })).not.toThrow();
    expect(() => declare({ batch: { maxSize: 10_000, maxWaitMs: 60_000 } })).not.toThrow();
    const merged = mergeHandlerOptions(STREAM_SHARD_HANDLER_DEFAULTS, { batch: { maxSize: 7 } });
    expect(merged.options.batch).toEqual({ maxSize: 7, maxWaitMs: 0 });
    expect(mergeHandlerOptions(STREAM_SHARD_HANDLER_DEFAULTS, {}).options.batch).toBeUndefined();
  });

  it('refuses ordering "key" on a batch handler, also when it comes from handlerDefaults', () => {
    const own = mergeHandlerOptions(STREAM_SHARD_HANDLER_DEFAULTS, {
      batch: { maxSize: 10 },
      ordering: 'key',
    });
    expect(own.issues.map((issue) => issue.path)).toEqual(['ordering']);
    const inherited = mergeHandlerOptions(
      { ...STREAM_SHARD_HANDLER_DEFAULTS, ordering: 'key' },
      { batch: { maxSize: 10 } },
    );
    expect(inherited.issues[0]?.problem).toBe('cannot be "key" on a batch handler');
    const keyOnly = mergeHandlerOptions(STREAM_SHARD_HANDLER_DEFAULTS, { ordering: 'key' });
    expect(keyOnly.issues).toEqual([]);
  });

  it('refuses batch in handlerDefaults (batching is chosen per handler)', () => {
    const issues = collectModuleOptionIssues({
      coordinatorUrl: 'http://127.0.0.1:1',
      token: 'x'.repeat(32),
      redis: 'redis://127.0.0.1:6379',
      group: 'g',
      handlerDefaults: { batch: { maxSize: 10 } },
    });
    expect(issues.map((issue) => issue.path)).toContain('handlerDefaults.batch');
  });

  it("refuses @ShardMessage('field') on a batch handler with UnsupportedBatchHandlerError", () => {
    let error: unknown;
    try {
      class OrdersHandler {
        @StreamShardHandler('orders', { batch: { maxSize: 10 } })
        handle(@ShardMessage('payload') _payload: unknown): void {}
      }
      void OrdersHandler;
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(UnsupportedBatchHandlerError);
    expect((error as Error).message).toMatch(/OrdersHandler\.handle.*@ShardMessage\("payload"\)/);
  });

  it('the shard reader refuses batch without a batch handler, and bad sizes', () => {
    const base = {
      createConnection: () => {
        throw new Error('not used');
      },
      group: 'g',
      memberId: 'm',
      stream: 'orders',
      shard: 0,
      key: 'k',
      deadLetterKey: 'k:dlq',
      handle: () => undefined,
    };
    expect(() => resolveShardReaderOptions({ ...base, batch: { maxSize: 5 } })).toThrow(
      ShardReaderOptionsError,
    );
    const handleBatch = async (): Promise<void> => undefined;
    expect(() =>
      resolveShardReaderOptions({ ...base, batch: { maxSize: 0 }, handleBatch }),
    ).toThrow(/batch\.maxSize/);
    expect(
      resolveShardReaderOptions({ ...base, batch: { maxSize: 5 }, handleBatch }).batch,
    ).toEqual({ maxSize: 5, maxWaitMs: 0 });
  });
});
