/** The largest part of a Redis stream id (`<ms>-<seq>`, each an unsigned 64-bit integer). */
export const MAX_STREAM_ID_PART = '18446744073709551615';

/** The last stream id there can be: nothing comes after it. */
export const LAST_STREAM_ID = `${MAX_STREAM_ID_PART}-${MAX_STREAM_ID_PART}`;

const MAX_PART = BigInt(MAX_STREAM_ID_PART);

/** Whether `id` is a full stream id Redis accepts: two decimal integers of at most 2^64 - 1. */
export function isStreamId(id: string): boolean {
  const match = /^(\d{1,20})-(\d{1,20})$/.exec(id);
  return (
    match !== null &&
    BigInt(match[1] as string) <= MAX_PART &&
    BigInt(match[2] as string) <= MAX_PART
  );
}
