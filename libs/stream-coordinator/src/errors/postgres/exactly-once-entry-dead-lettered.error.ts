import { NonRetryableError } from '../non-retryable.error.js';

/**
 * An exactly-once call was made for an entry that the offsets table records as settled without
 * effects: a member ran out of deliveries (or hit a non-retryable error) for it, recorded it as
 * dead-lettered and then wrote, or was about to write, its dead letter. The handler is not
 * called. A `NonRetryableError`, so the library dead-letters the entry at once: that writes the
 * dead letter a member that died between the record and the write never wrote, or that Redis
 * lost with its last writes (another copy when it had been kept). A zombie's late attempt at the entry ends here too, writing nothing.
 * Replay the dead letter to apply the entry.
 *
 * @publicApi
 */
export class ExactlyOnceEntryDeadLetteredError extends NonRetryableError {
  override name = 'ExactlyOnceEntryDeadLetteredError';

  constructor(
    /** The entry's Redis Stream id. */
    readonly entryId: string,
    /** Its stream. */
    readonly stream: string,
    /** Its shard. */
    readonly shard: number,
  ) {
    super(
      `entry ${entryId} of ${stream}[${shard}] was settled as a dead letter on an earlier delivery (the offsets table records it as dead-lettered, not applied): it is not applied now; it is dead-lettered instead, and replaying the dead letter applies it`,
    );
  }
}
