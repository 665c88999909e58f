import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';

/**
 * The default serializer: `payload` is the UTF-8 JSON text of the value.
 *
 * @publicApi
 */
export class JsonPayloadSerializer implements PayloadSerializer {
  /** @throws TypeError when the value has no JSON form (`undefined`, a function, a symbol). */
  serialize(payload: unknown): string {
    const text = JSON.stringify(payload);
    if (text === undefined) {
      throw new TypeError(
        `the payload (${typeof payload}) has no JSON representation; publish a JSON-serializable value or configure a serializer`,
      );
    }
    return text;
  }

  deserialize(raw: Buffer): unknown {
    return JSON.parse(raw.toString()); // UTF-8 (no argument: Node's fast path)
  }
}

/** Shared default instance. */
export const JSON_PAYLOAD_SERIALIZER: PayloadSerializer = new JsonPayloadSerializer();
