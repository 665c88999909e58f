import { StreamCoordinatorError } from '../stream-coordinator.error.js';

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
