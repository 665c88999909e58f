/**
 * A stream entry as the data-plane reads and scripts return it (Buffer replies): the id, the flat
 * `field, value, …` list, and for claimed entries the delivery count. A read on a direct
 * connection gives the id as a string already (its parser's `stream-entries` shape).
 */
export type RawStreamEntry = [id: Buffer | string, fields: Buffer[], deliveryCount?: number];

/** Reply of the `claim` script, decoded. */
export interface ClaimReply {
  /** Cursor of the next `claim` call; `0-0` when the scan is complete. */
  cursor: string;
  entries: RawStreamEntry[];
  /** Ids of pending entries that were deleted or trimmed (removed from the PEL by Redis). */
  deletedIds: string[];
}
