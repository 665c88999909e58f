import { SetMetadata } from '@nestjs/common';

/** Metadata key marking a provider class as a custom server-side assignor. */
export const SHARD_ASSIGNOR_PROVIDER = 'STREAM_COORDINATOR_SERVER:SHARD_ASSIGNOR';

/**
 * Marks a Nest provider of the coordinator app as a custom server-side assignor. The class must
 * implement `ShardAssignor` (`name` and `assign(input)`); it is found at bootstrap and offered to
 * members under its `name`. Members opt in with `"assignor": "<name>"` in their heartbeat.
 *
 * @example
 * ```ts
 * @ShardAssignorProvider()
 * @Injectable()
 * export class StickyRackAssignor implements ShardAssignor {
 *   readonly name = 'rack-aware';
 *   assign(input: AssignorInput) { ... }
 * }
 * ```
 * @publicApi
 */
export const ShardAssignorProvider = (): ClassDecorator =>
  SetMetadata(SHARD_ASSIGNOR_PROVIDER, true);
