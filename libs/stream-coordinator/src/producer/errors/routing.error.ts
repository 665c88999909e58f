import { StreamCoordinatorError } from '../../errors/stream-coordinator.error.js';

/**
 * The routing metadata of a stream could not be fetched from the coordinator (the cause is
 * attached: an unknown stream, the coordinator unreachable, a rejected token…).
 *
 * @publicApi
 */
export class RoutingFetchError extends StreamCoordinatorError {
  override readonly name = 'RoutingFetchError';

  constructor(
    readonly stream: string,
    cause: unknown,
    /**
     * From `publishBatch`: the ids of the messages written before routing failed, in input order
     * (`undefined` for the ones that were not). Retry only those; the others are in the stream.
     */
    readonly publishedIds: ReadonlyArray<string | undefined> = [],
  ) {
    super(
      `Could not fetch routing for stream ${stream} from the coordinator: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
  }
}

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
    super(`Routing metadata of stream ${stream} is invalid: ${problem}`);
  }
}
