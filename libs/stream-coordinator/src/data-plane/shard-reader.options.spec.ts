import { describe, expect, it } from 'vitest';
import { ShardReaderOptionsError } from '../errors/data-plane/shard-reader-options.error.js';
import { resolveShardReaderOptions, type ShardReaderOptions } from './shard-reader.options.js';

const base: ShardReaderOptions = {
  createConnection: () => {
    throw new Error('not used');
  },
  group: 'g',
  memberId: 'm',
  stream: 's',
  shard: 0,
  key: 'p:{s:0}',
  deadLetterKey: 'p:{s}:dlq',
  handle: async () => undefined,
};

describe('resolveShardReaderOptions', () => {
  it('applies the documented defaults', () => {
    expect(resolveShardReaderOptions(base)).toMatchObject({
      batchSize: 100,
      blockMs: 2000,
      maxDeliveries: 5,
      retry: { initialDelayMs: 100, maxDelayMs: 5000, multiplier: 2 },
      deadLetter: true,
      maxAckDelayMs: 1000,
      watchdogGraceMs: 3000,
      ordering: 'shard',
      maxConcurrency: 16,
      maxBufferedEntries: 200,
    });
  });

  it('names the invalid option', () => {
    const bad = (patch: Partial<ShardReaderOptions>) => () =>
      resolveShardReaderOptions({ ...base, ...patch });
    expect(bad({ batchSize: 0 })).toThrow(/"batchSize" must be an integer/);
    expect(bad({ blockMs: 1.5 })).toThrow(/"blockMs"/);
    expect(bad({ maxDeliveries: 0 })).toThrow(/"maxDeliveries"/);
    expect(bad({ key: '' })).toThrow(/"key" must be a non-empty string/);
    expect(bad({ retry: { multiplier: 0.5 } })).toThrow(/"retry.multiplier" must be ≥ 1/);
    expect(bad({ retry: { initialDelayMs: 10, maxDelayMs: 5 } })).toThrow(/"retry.maxDelayMs"/);
    expect(bad({ handle: undefined as never })).toThrow(ShardReaderOptionsError);
    expect(bad({ ordering: 'keys' as never })).toThrow(/"ordering" must be "shard" or "key"/);
    expect(bad({ maxConcurrency: 0 })).toThrow(
      /"maxConcurrency" must be an integer in \[1, 1024\]/,
    );
    expect(bad({ maxBufferedEntries: 0 })).toThrow(/"maxBufferedEntries"/);
  });
});
