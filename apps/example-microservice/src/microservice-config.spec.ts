import { describe, expect, it } from 'vitest';
import { loadMicroserviceConfig } from './microservice-config.js';

describe('loadMicroserviceConfig', () => {
  it('applies defaults and reads every variable', () => {
    expect(loadMicroserviceConfig({})).toEqual({
      coordinatorUrl: 'http://127.0.0.1:7400',
      token: undefined,
      redis: 'redis://127.0.0.1:6379',
      group: 'example-microservice',
    });
    expect(
      loadMicroserviceConfig({
        COORDINATOR_URL: 'http://coordinator:7400',
        COORDINATOR_TOKEN: 't',
        REDIS_URL: 'redis://redis:6379',
        GROUP: 'billing',
      }),
    ).toEqual({
      coordinatorUrl: 'http://coordinator:7400',
      token: 't',
      redis: 'redis://redis:6379',
      group: 'billing',
    });
  });
});
