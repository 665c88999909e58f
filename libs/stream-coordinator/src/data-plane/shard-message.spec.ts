import { describe, expect, it } from 'vitest';
import { entryIdTime, ShardMessage } from './shard-message.js';

describe('entryIdTime', () => {
  it('reads the ms part of an entry id', () => {
    expect(entryIdTime('1700000000123-0')).toBe(1_700_000_000_123);
    expect(entryIdTime('1700000000123-42')).toBe(1_700_000_000_123);
    expect(entryIdTime('0-1')).toBe(0);
    expect(entryIdTime('1700000000123')).toBe(1_700_000_000_123);
    expect(entryIdTime('18446744073709551615-0')).toBe(Number('18446744073709551615'));
  });

  it('is NaN for what is not an id', () => {
    for (const bad of ['', '-1', 'abc-0', '12a-0', ' 12-0']) expect(entryIdTime(bad)).toBeNaN();
  });

  it('gives the message its publishedAt', () => {
    const m = new ShardMessage('1700000000123-7', 's', 0, 'k', {}, {}, 1);
    expect(m.publishedAt.getTime()).toBe(1_700_000_000_123);
    expect(m.publishedAt).toBe(m.publishedAt); // computed once
  });

  it('serializes as JSON with every field, publishedAt included', () => {
    const m = new ShardMessage('1700000000123-7', 's', 2, 'k', { a: 1 }, { h: 'v' }, 3);
    expect(JSON.parse(JSON.stringify(m))).toEqual({
      id: '1700000000123-7',
      stream: 's',
      shard: 2,
      key: 'k',
      payload: { a: 1 },
      headers: { h: 'v' },
      deliveryCount: 3,
      publishedAt: '2023-11-14T22:13:20.123Z',
    });
  });
});
