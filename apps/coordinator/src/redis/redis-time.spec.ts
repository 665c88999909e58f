import { describe, expect, it } from 'vitest';
import { redisTimeMs } from './redis-time.js';

describe('redisTimeMs', () => {
  it('turns seconds and microseconds into whole milliseconds, rounded down', () => {
    expect(redisTimeMs(['1700000000', '999999'])).toBe(1_700_000_000_999);
    expect(redisTimeMs(['1700000000', '000999'])).toBe(1_700_000_000_000);
    expect(redisTimeMs(['0', '1000'])).toBe(1);
  });
});
