/**
 * Limits and identifier rules of the wire protocol (docs/protocol.md §2.5, §2.6).
 *
 * @publicApi
 */
export const PROTOCOL_LIMITS = {
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: 1024 * 1024,
  /** Longest group or stream name. */
  maxNameLength: 128,
  /** Longest member or instance id (also rack id and assignor name). */
  maxIdLength: 255,
  /** Default and largest page size of the event log route. */
  defaultEventsLimit: 100,
  maxEventsLimit: 1000,
} as const;

/** Group and stream names: 1–128 characters of `[A-Za-z0-9._-]`. @publicApi */
export const NAME_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

/** Member and instance ids: 1–255 characters of printable ASCII (0x21–0x7E). @publicApi */
export const ID_PATTERN = /^[\x21-\x7e]{1,255}$/;

/** Epoch sent to join or rejoin a group. @publicApi */
export const JOIN_EPOCH = 0;
/** Epoch sent to leave a group for good. @publicApi */
export const LEAVE_EPOCH = -1;
/** Epoch a static member sends to leave for a while, keeping its shards reserved. @publicApi */
export const TEMPORARY_LEAVE_EPOCH = -2;

/** True when `value` is a valid group or stream name. @publicApi */
export function isValidName(value: string): boolean {
  return NAME_PATTERN.test(value);
}

/** True when `value` is a valid member or instance id. @publicApi */
export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value);
}
