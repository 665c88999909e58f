import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';

/**
 * The default payload encoding: `JSON.stringify` on the way in, `JSON.parse` of the UTF-8 text on
 * the way out. `undefined` is written as `null` so every entry has a decodable payload.
 *
 * @publicApi
 */
export class JsonPayloadSerializer implements PayloadSerializer {
  serialize(payload: unknown): string {
    return JSON.stringify(payload) ?? 'null';
  }

  deserialize(raw: Buffer): unknown {
    return JSON.parse(raw.toString()); // UTF-8 (no argument: Node's fast path)
  }
}
