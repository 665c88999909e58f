import { describe, expect, it } from 'vitest';
import { isRedisUrl, redisUrlScheme } from './redis-url.js';

describe('Redis URL schemes', () => {
  it('accepts the four schemes createRedisConnection connects with, in any case', () => {
    for (const url of [
      'redis://h:1',
      'rediss://h:1',
      'redis+cluster://a:1,b:2',
      'rediss+cluster://a:1',
      'REDIS://h:1',
      '  redis://h:1 ',
    ]) {
      expect(isRedisUrl(url), url).toBe(true);
    }
    expect(redisUrlScheme('Rediss+Cluster://a:1')).toBe('rediss+cluster');
  });

  it('refuses other schemes, nothing after ://, and white space inside', () => {
    for (const url of ['http://h:1', 'redis:/h', 'redis://', 'redis://h :1', '127.0.0.1:6379']) {
      expect(isRedisUrl(url), url).toBe(false);
    }
    expect(redisUrlScheme('ftp://h')).toBeUndefined();
  });
});
