import { describe, expect, it } from 'vitest';
import { UndecodableEntryError } from '../errors/data-plane/undecodable-entry.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import { JSON_PAYLOAD_SERIALIZER } from './json-payload.serializer.js';
import { entryIdTime, ShardMessage } from './shard-message.js';

/** The JSON serializer, counting its decode calls. */
function countingSerializer(): PayloadSerializer & { calls: number } {
  return {
    calls: 0,
    serialize: (value) => JSON_PAYLOAD_SERIALIZER.serialize(value),
    deserialize(raw) {
      this.calls++;
      return JSON_PAYLOAD_SERIALIZER.deserialize(raw);
    },
  };
}

const encoded = (serializer: PayloadSerializer, text: string): ShardMessage =>
  ShardMessage.encoded('1700000000123-7', 's', 2, 'k', Buffer.from(text), serializer, {}, 1);

describe('ShardMessage payload', () => {
  it('decodes the payload on the first read only, and never when it is not read', () => {
    const serializer = countingSerializer();
    const unread = encoded(serializer, '{"a":1}');
    expect([unread.id, unread.key, unread.shard, unread.publishedAt.getTime()]).toEqual([
      '1700000000123-7',
      'k',
      2,
      1_700_000_000_123,
    ]);
    expect(serializer.calls).toBe(0);
    const read = encoded(serializer, '{"a":1}');
    expect(read.payload).toEqual({ a: 1 });
    expect(read.payload).toBe(read.payload);
    expect(serializer.calls).toBe(1);
    expect(read.payloadError).toBeUndefined();
  });

  it('keeps a payload that decodes to undefined or null', () => {
    const undefinedSerializer: PayloadSerializer = {
      serialize: () => '',
      deserialize: () => undefined,
    };
    const m = encoded(undefinedSerializer, 'x');
    expect(m.payload).toBeUndefined();
    expect(m.payloadError).toBeUndefined();
    expect(encoded(JSON_PAYLOAD_SERIALIZER, 'null').payload).toBeNull();
  });

  it('throws UndecodableEntryError on every read of a payload the serializer rejects', () => {
    const serializer = countingSerializer();
    const m = encoded(serializer, 'not json{');
    expect(m.payloadError).toBeUndefined();
    expect(() => m.payload).toThrow(UndecodableEntryError);
    expect(() => m.payload).toThrow(
      /entry 1700000000123-7 cannot be decoded: the serializer rejected/,
    );
    expect(serializer.calls).toBe(1);
    expect(m.payloadError?.entryId).toBe('1700000000123-7');
    expect(m.payloadError?.cause).toBeInstanceOf(SyntaxError);
    expect(() => JSON.stringify(m)).toThrow(UndecodableEntryError);
  });

  it('serializes an encoded message with its decoded payload', () => {
    const m = encoded(JSON_PAYLOAD_SERIALIZER, '{"b":[1,2]}');
    expect(JSON.parse(JSON.stringify(m))).toMatchObject({ payload: { b: [1, 2] }, key: 'k' });
  });
});

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
