import { describe, expect, it } from 'vitest';
import { UndecodableEntryError } from '../errors/data-plane/undecodable-entry.error.js';
import { deadLetterFields, toError } from './dead-letter.js';
import { decodeEntry, encodeEntryFields, encodeHeaders } from './entry-codec.js';
import { JSON_PAYLOAD_SERIALIZER } from './json-payload.serializer.js';

const buffers = (...values: string[]): Buffer[] => values.map((v) => Buffer.from(v));

describe('entry encoding', () => {
  it('encodes key, payload and (only when non-empty) headers, in that order', () => {
    expect(encodeEntryFields('k', '{"a":1}')).toEqual(['key', 'k', 'payload', '{"a":1}']);
    expect(encodeEntryFields('k', 'p', {})).toEqual(['key', 'k', 'payload', 'p']);
    expect(encodeEntryFields('k', 'p', { h: 'v' })).toEqual([
      'key',
      'k',
      'payload',
      'p',
      'headers',
      '{"h":"v"}',
    ]);
    expect(() => encodeHeaders({ h: 1 as unknown as string })).toThrow(
      /header "h" must be a string/,
    );
  });

  it('decodes an entry, ignoring unknown fields; publishedAt is the id time', () => {
    const message = decodeEntry(
      '1700000000123-4',
      buffers('extra', 'x', 'key', 'cust-é', 'payload', '{"n":2}', 'headers', '{"t":"1"}'),
      3,
      'orders',
      7,
      JSON_PAYLOAD_SERIALIZER,
    );
    expect(message).toMatchObject({
      id: '1700000000123-4',
      stream: 'orders',
      shard: 7,
      key: 'cust-é',
      payload: { n: 2 },
      headers: { t: '1' },
      deliveryCount: 3,
      publishedAt: new Date(1700000000123),
    });
    expect(
      decodeEntry('1-0', buffers('key', 'k', 'payload', '1'), 1, 's', 0, JSON_PAYLOAD_SERIALIZER)
        .headers,
    ).toEqual({});
  });

  it('marks entries that do not follow the encoding as undecodable, naming why', () => {
    const decode =
      (...fields: string[]) =>
      () =>
        decodeEntry('1-0', buffers(...fields), 1, 's', 0, JSON_PAYLOAD_SERIALIZER);
    expect(decode('payload', '1')).toThrow(/no "key" field/);
    expect(decode('key', 'k')).toThrow(/no "payload" field/);
    // the payload is decoded when it is read
    const message = decode('key', 'k', 'payload', '{')();
    expect(() => message.payload).toThrow(UndecodableEntryError);
    expect(() => message.payload).toThrow(/serializer rejected the payload/);
    expect(message.payloadError).toBeInstanceOf(UndecodableEntryError);
    expect(decode('key', 'k', 'payload', '1', 'headers', '[1]')).toThrow(/not a JSON object/);
    expect(decode('key', 'k', 'payload', '1', 'headers', '{')).toThrow(/not JSON/);
    expect(decode('key', 'k', 'payload', '1', 'headers', '{"a":1}')).toThrow(/non-string value/);
  });
});

describe('dead-letter fields', () => {
  it('copies the original key/payload/headers and records where and why', () => {
    const error = new Error('boom');
    const fields = deadLetterFields({
      fields: buffers('key', 'k', 'payload', 'p', 'headers', '{}'),
      stream: 's',
      shard: 2,
      group: 'g',
      id: '5-1',
      reason: 'max-deliveries',
      error,
      deliveryCount: 5,
      memberId: 'm',
      failedAt: new Date(0),
    }).map((f) => f.toString());
    const record = Object.fromEntries(
      Array.from({ length: fields.length / 2 }, (_, i) => [fields[2 * i], fields[2 * i + 1]]),
    );
    expect(record).toMatchObject({
      key: 'k',
      payload: 'p',
      headers: '{}',
      stream: 's',
      shard: '2',
      group: 'g',
      id: '5-1',
      reason: 'max-deliveries',
      error: 'boom',
      deliveryCount: '5',
      memberId: 'm',
      failedAt: '1970-01-01T00:00:00.000Z',
    });
    expect(record.stack?.length).toBeLessThanOrEqual(2000);
  });

  it('normalizes thrown non-errors', () => {
    expect(toError('x').message).toBe('x');
    expect(toError({ a: 1 }).message).toContain('{"a":1}');
    const e = new Error('e');
    expect(toError(e)).toBe(e);
  });
});
