/**
 * The routing metadata of a stream could not be fetched from the coordinator (the cause is
 * attached: an unknown stream, the coordinator unreachable, a rejected token…).
 *
 * @publicApi
 */
export class RoutingFetchError extends Error {
  override readonly name = 'RoutingFetchError';

  constructor(
    readonly stream: string,
    cause: unknown,
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
export class InvalidRoutingError extends Error {
  override readonly name = 'InvalidRoutingError';

  constructor(
    readonly stream: string,
    problem: string,
  ) {
    super(`Routing metadata of stream ${stream} is invalid: ${problem}`);
  }
}
