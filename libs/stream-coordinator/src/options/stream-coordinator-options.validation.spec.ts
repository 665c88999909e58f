import { describe, expect, it } from 'vitest';
import { InvalidModuleOptionsError } from '../errors/invalid-module-options.error.js';
import { NoopLogger } from './noop.logger.js';
import {
  collectHandlerOptionIssues,
  mergeHandlerOptions,
  renderReceived,
  resolveStreamCoordinatorOptions,
} from './stream-coordinator-options.validation.js';

const VALID = {
  coordinatorUrl: 'http://127.0.0.1:7400',
  token: 'member-token',
  redis: 'redis://127.0.0.1:6379',
  group: 'billing',
};

function errorOf(raw: unknown): InvalidModuleOptionsError {
  try {
    resolveStreamCoordinatorOptions(raw);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidModuleOptionsError);
    return error as InvalidModuleOptionsError;
  }
  throw new Error('expected the options to be rejected');
}

describe('resolveStreamCoordinatorOptions', () => {
  it('leaves temporarily by default only as a static member', () => {
    expect(resolveStreamCoordinatorOptions(VALID).leaveOnShutdown).toBe('leave');
    expect(resolveStreamCoordinatorOptions({ ...VALID, instanceId: 'pod-0' }).leaveOnShutdown).toBe(
      'temporary',
    );
    expect(
      resolveStreamCoordinatorOptions({ ...VALID, instanceId: 'pod-0', leaveOnShutdown: 'leave' })
        .leaveOnShutdown,
    ).toBe('leave');
    expect(errorOf({ ...VALID, leaveOnShutdown: 'temporary' }).message).toContain(
      'option "leaveOnShutdown" can be "temporary" only for a static member',
    );
    expect(errorOf({ ...VALID, leaveOnShutdown: 'later' }).optionPath).toBe('leaveOnShutdown');
  });

  it('gives the brief example message for a zero batch size', () => {
    expect(errorOf({ ...VALID, handlerDefaults: { batchSize: 0 } }).message).toBe(
      'StreamCoordinatorModule: option "handlerDefaults.batchSize" must be an integer between 1 and 10000 (got 0)',
    );
  });

  it('accepts the bounds of each range and rejects one past them', () => {
    const bounds: Array<[string, number, number]> = [
      ['rebalanceTimeoutMs', 1, 3_600_000],
      ['shutdownTimeoutMs', 1, 3_600_000],
      ['requestTimeoutMs', 1, 600_000],
    ];
    for (const [key, min, max] of bounds) {
      expect(() => resolveStreamCoordinatorOptions({ ...VALID, [key]: min })).not.toThrow();
      expect(() => resolveStreamCoordinatorOptions({ ...VALID, [key]: max })).not.toThrow();
      expect(errorOf({ ...VALID, [key]: min - 1 }).optionPath).toBe(key);
      expect(errorOf({ ...VALID, [key]: max + 1 }).optionPath).toBe(key);
    }
    const handlerBounds: Array<[string, number, number]> = [
      ['concurrency', 1, 1024],
      ['batchSize', 1, 10_000],
      ['blockMs', 1, 300_000],
      ['maxDeliveries', 1, 1000],
      ['maxConcurrency', 1, 1024],
      ['maxBufferedEntries', 1, 100_000],
    ];
    for (const [key, min, max] of handlerBounds) {
      expect(collectHandlerOptionIssues({ [key]: min })).toEqual([]);
      expect(collectHandlerOptionIssues({ [key]: max })).toEqual([]);
      expect(collectHandlerOptionIssues({ [key]: min - 1 })[0]?.path).toBe(key);
      expect(collectHandlerOptionIssues({ [key]: max + 1 })[0]?.path).toBe(key);
    }
  });

  it('takes ordering "shard" or "key" only (default "shard")', () => {
    expect(resolveStreamCoordinatorOptions({ ...VALID }).handlerDefaults).toMatchObject({
      ordering: 'shard',
      maxConcurrency: 16,
      maxBufferedEntries: 200,
    });
    expect(collectHandlerOptionIssues({ ordering: 'key' })).toEqual([]);
    const [issue] = collectHandlerOptionIssues({ ordering: 'keys' });
    expect(issue).toMatchObject({ path: 'ordering', problem: 'must be "shard" or "key"' });
    expect(errorOf({ ...VALID, handlerDefaults: { ordering: 1 } }).optionPath).toBe(
      'handlerDefaults.ordering',
    );
  });

  it('reports every problem in issues, the first in the message', () => {
    const error = errorOf({ ...VALID, group: '', rackId: '', nope: 1 });
    expect(error.issues.map((issue) => issue.path)).toEqual(['group', 'rackId', 'nope']);
    expect(error.message.startsWith('StreamCoordinatorModule: option "group"')).toBe(true);
    expect(error.message).toContain('; also: option "rackId"');
  });

  it('resolves logger: false to a no-op logger and keeps a given logger', () => {
    expect(resolveStreamCoordinatorOptions({ ...VALID, logger: false }).logger).toBeInstanceOf(
      NoopLogger,
    );
    const logger = new NoopLogger();
    expect(resolveStreamCoordinatorOptions({ ...VALID, logger }).logger).toBe(logger);
  });

  it('keeps a given serializer and metrics registry by reference', () => {
    const serializer = { serialize: () => '', deserialize: () => null };
    const registry = {
      registerMetric: () => undefined,
      metrics: async () => '',
      contentType: 'text/plain',
    };
    const resolved = resolveStreamCoordinatorOptions({
      ...VALID,
      serializer,
      metrics: { registry, prefix: 'app_' },
    });
    expect(resolved.serializer).toBe(serializer);
    expect(resolved.metrics).toEqual({ registry, prefix: 'app_', sampleIntervalMs: 5000 });
  });

  it('freezes the resolved options', () => {
    expect(Object.isFrozen(resolveStreamCoordinatorOptions({ ...VALID }))).toBe(true);
  });
});

describe('mergeHandlerOptions', () => {
  const defaults = resolveStreamCoordinatorOptions({ ...VALID }).handlerDefaults;

  it('overrides field by field, retry included', () => {
    expect(
      mergeHandlerOptions(defaults, { concurrency: 1, retry: { multiplier: 3 } }).options,
    ).toEqual({
      ...defaults,
      concurrency: 1,
      retry: { ...defaults.retry, multiplier: 3 },
    });
  });

  it('reports retry delays that are out of order only once merged', () => {
    expect(collectHandlerOptionIssues({ retry: { initialDelayMs: 6000 } })).toEqual([]);
    const { issues } = mergeHandlerOptions(defaults, { retry: { initialDelayMs: 6000 } });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({
      path: 'retry.initialDelayMs',
      received: '6000, with maxDelayMs 5000',
    });
  });
});

describe('renderReceived', () => {
  it('renders values briefly and hides secrets', () => {
    expect(renderReceived(undefined)).toBe('undefined');
    expect(renderReceived(null)).toBe('null');
    expect(renderReceived('')).toBe('an empty string');
    expect(renderReceived('abc')).toBe('"abc"');
    expect(renderReceived('abc', true)).toBe('a string of 3 characters');
    expect(renderReceived(12, true)).toBe('a number');
    expect(renderReceived(() => 1)).toBe('a function');
    expect(renderReceived([1])).toBe('an array');
    expect(renderReceived(new Map())).toBe('an instance of Map');
    expect(renderReceived(10n)).toBe('10n');
  });
});
