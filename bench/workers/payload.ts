/** A filler string so that one encoded message is about 100 bytes. */
export const FILLER = 'x'.repeat(64);

/** The bench payload: a sequence number, an optional publish time `t`, and filler. */
export interface BenchPayload {
  readonly n: number;
  readonly t?: number;
  readonly p: string;
}

/** The payload of message number `n` (≈ 90 bytes of JSON). */
export function benchPayload(n: number, t?: number): BenchPayload {
  return t === undefined ? { n, p: FILLER } : { n, t, p: FILLER };
}
