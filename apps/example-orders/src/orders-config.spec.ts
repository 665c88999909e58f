import { describe, expect, it } from 'vitest';
import { loadOrdersConfig } from './orders-config.js';

describe('loadOrdersConfig', () => {
  it('requires DATABASE_URL', () => {
    expect(() => loadOrdersConfig({})).toThrow(/DATABASE_URL must name the PostgreSQL/);
  });

  it('names PORT when it is not a port', () => {
    expect(() => loadOrdersConfig({ DATABASE_URL: 'postgres://db/x', PORT: 'abc' })).toThrow(
      'PORT must be a non-negative integer (got "abc")',
    );
  });

  it('reads the rest with defaults', () => {
    expect(loadOrdersConfig({ DATABASE_URL: 'postgres://db/x' })).toEqual({
      coordinatorUrl: 'http://127.0.0.1:7400',
      token: undefined,
      redisUrl: 'redis://127.0.0.1:6379',
      group: 'orders-writer',
      databaseUrl: 'postgres://db/x',
      port: 7700,
    });
  });
});
