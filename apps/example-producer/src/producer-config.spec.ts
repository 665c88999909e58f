import { describe, expect, it } from 'vitest';
import { InvalidProducerConfigError } from './invalid-producer-config.error.js';
import { loadProducerConfig } from './producer-config.js';

describe('loadProducerConfig', () => {
  it('applies defaults and reads every variable', () => {
    expect(loadProducerConfig({ COORDINATOR_TOKEN: 't' })).toEqual({
      coordinatorUrl: 'http://127.0.0.1:7400',
      token: 't',
      redisUrl: 'redis://127.0.0.1:6379',
      stream: 'orders',
      keyCount: 100,
      rate: 50,
      maxMessages: 0,
      batchSize: 200,
      trimMaxLen: 0,
      port: 7600,
    });
    const config = loadProducerConfig({
      COORDINATOR_URL: 'http://coordinator:7400',
      COORDINATOR_TOKEN: 't',
      REDIS_URL: 'redis+cluster://a:1,b:2',
      STREAM: 'payments',
      KEY_COUNT: '7',
      RATE: '0',
      MAX_MESSAGES: '1000',
      BATCH_SIZE: '50',
      TRIM_MAXLEN: '100000',
      PORT: '0',
    });
    expect(config).toMatchObject({
      stream: 'payments',
      keyCount: 7,
      rate: 0,
      maxMessages: 1000,
      port: 0,
    });
  });

  it('lists every bad variable by name', () => {
    let caught: unknown;
    try {
      loadProducerConfig({
        COORDINATOR_URL: 'ftp://x',
        KEY_COUNT: '0',
        RATE: 'fast',
        STREAM: 'a b',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidProducerConfigError);
    const problems = (caught as InvalidProducerConfigError).problems.join('\n');
    for (const name of ['COORDINATOR_URL', 'COORDINATOR_TOKEN', 'KEY_COUNT', 'RATE', 'STREAM']) {
      expect(problems).toContain(name);
    }
  });
});
