import { describe, expect, it } from 'vitest';
import { JsonPayloadSerializer } from './json-payload.serializer.js';

describe('JsonPayloadSerializer', () => {
  const serializer = new JsonPayloadSerializer();

  it('round-trips JSON values', () => {
    const payload = { id: 7, items: ['a', 'b'], note: 'ünïcode' };
    expect(serializer.deserialize(Buffer.from(serializer.serialize(payload)))).toEqual(payload);
  });

  it('refuses values without a JSON form, naming the type', () => {
    expect(() => serializer.serialize(undefined)).toThrow(/payload \(undefined\) has no JSON/);
    expect(() => serializer.serialize(() => 1)).toThrow(/payload \(function\)/);
  });

  it('throws on undecodable input', () => {
    expect(() => serializer.deserialize(Buffer.from('{nope'))).toThrow(SyntaxError);
  });
});
