import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * The coordinator's routing metadata for a stream is inconsistent (an unknown routing function,
 * ranges that do not cover every slot, a range naming a shard that is not listed…).
 *
 * @publicApi
 */
export class InvalidRoutingError extends StreamCoordinatorError {
  override readonly name = 'InvalidRoutingError';

  constructor(
    readonly stream: string,
    /** What is wrong with the metadata. */
    readonly problem: string,
    /** From `publishBatch`: as {@link RoutingFetchError.publishedIds}. */
    readonly publishedIds: ReadonlyArray<string | undefined> = [],
  ) {
    super(
      `Routing metadata of stream ${stream} is invalid: ${problem}. Check that the coordinator ` +
        `runs a version compatible with this library (GET /v1/streams/${stream} shows what it serves).`,
    );
  }
}
