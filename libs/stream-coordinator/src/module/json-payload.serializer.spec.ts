import { describe, expect, it } from 'vitest';
import { JsonPayloadSerializer } from './json-payload.serializer.js';

describe('JsonPayloadSerializer', () => {
  const serializer = new JsonPayloadSerializer();

  it('round-trips JSON values', () => {
    const payload = { id: 7, items: ['a', 'b'], note: 'ünïcode' };
    expect(serializer.deserialize(Buffer.from(serializer.serialize(payload)))).toEqual(payload);
  });

  it('writes undefined as null', () => {
    expect(serializer.serialize(undefined)).toBe('null');
  });

  it('throws on undecodable input', () => {
    expect(() => serializer.deserialize(Buffer.from('{nope'))).toThrow(SyntaxError);
  });
});
