/**
 * Encodes payloads into the `payload` field of a stream entry and back. The default is JSON
 * (`JSON.stringify` / `JSON.parse` of the UTF-8 text).
 *
 * @publicApi
 */
export interface PayloadSerializer {
  /** Encodes a payload for the stream entry. */
  serialize(payload: unknown): string | Buffer;
  /** Decodes the raw field. Throwing marks the message as undecodable (dead-lettered at once). */
  deserialize(raw: Buffer): unknown;
}
