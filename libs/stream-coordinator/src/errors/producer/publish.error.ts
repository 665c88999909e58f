import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Redis failed a publish for another reason than stale routing (connection lost, out of memory,
 * wrong key type…). The cause is attached. For a batch, `publishedIds` says which messages
 * were written anyway (`undefined` for the ones that were not, or may not have been).
 *
 * @publicApi
 */
export class PublishError extends StreamCoordinatorError {
  override readonly name = 'PublishError';

  constructor(
    readonly stream: string,
    cause: unknown,
    readonly publishedIds: ReadonlyArray<string | undefined> = [],
  ) {
    super(
      `Publishing to stream ${stream} failed: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}
