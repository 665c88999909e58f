import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The entry could not be decoded (see the entry encoding in `entry-codec.ts`): no `key` or
 * `payload` field, `headers` that are not a JSON object of strings, or a payload the serializer
 * rejects. The reader dead-letters such an entry at once, without retries (retrying cannot make
 * it decodable), then acknowledges it.
 */
export class UndecodableEntryError extends StreamCoordinatorError {
  override readonly name = 'UndecodableEntryError';

  constructor(
    readonly entryId: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`entry ${entryId} cannot be decoded: ${reason}`, options);
  }
}
