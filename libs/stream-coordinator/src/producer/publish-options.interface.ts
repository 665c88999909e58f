/**
 * How a shard is trimmed when a message is added (`XADD … MAXLEN|MINID [~] <threshold>`):
 * keep at most `maxLen` entries, or drop entries with ids below `minId`. `approximate` (`~`,
 * the default) is cheaper and may keep a few more entries than asked.
 *
 * Trimming drops entries whether or not every group has handled them; size it well above
 * the expected backlog.
 *
 * @publicApi
 */
export type TrimPolicy =
  { maxLen: number; approximate?: boolean } | { minId: string; approximate?: boolean };

/**
 * Options of one publish.
 *
 * @publicApi
 */
export interface PublishOptions {
  /** Headers stored with the message (string → string). */
  headers?: Record<string, string>;
  /** Trim the shard while writing. */
  trim?: TrimPolicy;
}

/**
 * One message of a batch.
 *
 * @publicApi
 */
export interface PublishMessage {
  /** Routing key: messages with the same key go to the same shard, in order. */
  key: string;
  payload: unknown;
  headers?: Record<string, string>;
}

/**
 * Options of a batch publish.
 *
 * @publicApi
 */
export interface PublishBatchOptions {
  /** Trim every shard written to. */
  trim?: TrimPolicy;
}
