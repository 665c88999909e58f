import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A publish kept hitting closed (or removed) shards: every attempt, with routing refreshed from
 * the coordinator in between, was refused with `STALE_ROUTING`. Usually a reshard that has not
 * published its new layout yet; retry later, or check the stream's state with
 * `GET /v1/streams/{stream}`.
 *
 * @publicApi
 */
export class StaleRoutingError extends StreamCoordinatorError {
  override readonly name = 'StaleRoutingError';

  constructor(
    readonly stream: string,
    readonly attempts: number,
    /** The last shard key that refused the write. */
    readonly shardKey: string,
    options: { cause?: unknown; publishedIds?: ReadonlyArray<string | undefined> } = {},
  ) {
    super(
      `Publishing to stream ${stream} failed after ${attempts} attempts: shard ${shardKey} is closed ` +
        '(STALE_ROUTING) and refreshed routing still pointed to closed shards. The stream is probably ' +
        'being resharded; retry later or check GET /v1/streams/' +
        stream +
        '.',
      { cause: options.cause },
    );
    this.publishedIds = options.publishedIds ?? [];
  }

  /**
   * From `publishBatch`: the ids of the messages written before it gave up — on the shards that
   * took them, possibly in earlier attempts — in input order (`undefined` for the ones that were
   * not). Retry only those; the others are in the stream.
   */
  readonly publishedIds: ReadonlyArray<string | undefined>;
}
