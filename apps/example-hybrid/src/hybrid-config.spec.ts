import { describe, expect, it } from 'vitest';
import { loadHybridConfig } from './hybrid-config.js';

describe('loadHybridConfig', () => {
  it('applies defaults and reads every variable', () => {
    expect(loadHybridConfig({})).toEqual({
      coordinator: {
        coordinatorUrl: 'http://127.0.0.1:7400',
        token: undefined,
        redis: 'redis://127.0.0.1:6379',
        group: 'example-hybrid',
      },
      port: 7600,
    });
    expect(
      loadHybridConfig({
        COORDINATOR_URL: 'http://coordinator:7400',
        COORDINATOR_TOKEN: 't',
        REDIS_URL: 'redis://redis:6379',
        GROUP: 'shop',
        PORT: '0',
      }),
    ).toEqual({
      coordinator: {
        coordinatorUrl: 'http://coordinator:7400',
        token: 't',
        redis: 'redis://redis:6379',
        group: 'shop',
      },
      port: 0,
    });
  });

  it('names PORT when it is not a port number', () => {
    for (const PORT of ['-1', '1.5', 'http']) {
      expect(() => loadHybridConfig({ PORT })).toThrow(/^PORT must be a non-negative integer/);
    }
  });
});
