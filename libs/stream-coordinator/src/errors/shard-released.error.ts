import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * Why a shard's handlers were told to stop: `revoked` (the coordinator moved the shard; it is
 * released once the handler settles), `fenced` (this member lost its membership — the coordinator
 * fenced or removed it, or it fenced itself because it could not reach the coordinator or did not
 * release a revoked shard within the rebalance timeout), `lost` (the shard's fence in Redis names
 * another member) or `shutdown` (the application is closing).
 *
 * @publicApi
 */
export type ShardReleaseCause = 'revoked' | 'fenced' | 'lost' | 'shutdown';

/**
 * The reason of a handler context's aborted `signal`: this member is giving the message's shard
 * up. A handler that stops because of it (throwing this error, or any error, after the signal
 * aborted) leaves its message pending: it is neither retried here nor dead-lettered, and the
 * shard's next owner handles it again.
 *
 * @publicApi
 */
export class ShardReleasedError extends StreamCoordinatorError {
  override name = 'ShardReleasedError';

  constructor(
    readonly stream: string,
    readonly shard: number,
    readonly releaseCause: ShardReleaseCause,
  ) {
    super(
      `shard ${stream}/${shard} is being released (${releaseCause}): stop working on the message; if the handler does not finish it, the message stays pending and the shard's next owner handles it`,
    );
  }
}
